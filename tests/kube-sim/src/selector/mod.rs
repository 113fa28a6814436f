//! Label and field selectors, following k8s.io/apimachinery (`labels.Parse`,
//! `metav1.LabelSelectorAsSelector`, `fields.ParseSelector`) and the apiserver's per-resource
//! field-label support.

mod field;
mod label;
mod validation;

pub use field::FieldSelector;
pub use label::LabelSelector;

#[cfg(test)]
mod tests;
