//! The admission webhook of eviction-autoscaler: an axum router behind rustls that taps every
//! eviction (a [`Signal`](eviction_autoscaler_shared::admission::Signal)), every new Deployment
//! and every PDB write, hands each to an
//! [`AdmissionHandler`](eviction_autoscaler_shared::admission::AdmissionHandler) (the
//! controller's `AdmissionQueue`) without waiting, and always allows (a blocked eviction
//! held, bounded, until the controller says its budget opened: ARCHITECTURE.md §4.8). It also serves the plain-HTTP health port, generates development certificates, and
//! in self-managed mode ([`self_managed`]) keeps its certificate in a Secret, serves it from
//! memory, publishes the CA as the webhooks' `caBundle` and renews it before it expires.
//!
//! Wiring, as `main` does it:
//! ```ignore
//! let metrics = Metrics::new();
//! metrics.register(&mut registry);
//! let app = router(WebhookState::new(handler, metrics.clone()));
//! tokio::try_join!(
//!     serve(ServeSettings::new(addr, cert, key), app, metrics, readiness.clone(), shutdown()),
//!     serve_health(health_addr, Arc::new(registry), readiness, shutdown()),
//! )?;
//! ```

pub mod certs;
mod error;
mod health;
mod metrics;
mod review;
mod router;
pub mod self_managed;
mod server;
mod tls;

pub use error::Error;
pub use health::{bind_health, health_router, serve_health, serve_health_on};
pub use metrics::Metrics;
pub use router::{MAX_BODY_BYTES, WebhookState, router};
pub use server::{ServeSettings, WebhookServer, serve};
pub use tls::PemPair;
