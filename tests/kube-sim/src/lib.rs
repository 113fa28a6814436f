//! kube-sim: an in-memory Kubernetes API server for end-to-end tests, benchmarks and the demo.
//!
//! It depends on no product crate: it is the independent oracle the product is judged against.
//!
//! Start one in-process with [`Server::start`]; drive it over HTTPS (kubectl, kube-rs) or
//! directly through the [`Cluster`] API.

pub mod go_fmt;
pub mod go_json;
pub(crate) mod managed_fields;
pub mod patch;
pub mod protobuf;
pub mod selector;
pub mod table;

pub mod auth;
pub mod cluster;
pub mod cluster_logic;
pub mod controllers;
pub mod defaults;
pub mod discovery;
pub mod error;
pub mod event_mapping;
pub mod eviction_handler;
pub mod http;
pub mod meta;
pub mod request_log;
pub mod resources;
pub mod schema;
pub mod seed;
pub mod server;
pub mod store;
pub mod tls;
pub mod validation;
pub mod warnings;
pub mod webhooks;

pub use cluster::{
    AdmissionHook, AdmissionRequest, Cluster, ClusterConfig, DeleteOptions, DeleteOutcome, Gvr, ListOptions,
    ListResult, Operation, SubresourceHandler, SubresourceRequest, WatchEvent, WatchEventType, WatchOptions,
    WatchStream, WriteOptions,
};
pub use controllers::{BehaviourHandle, ClusterBehaviour};
pub use error::ApiError;
pub use request_log::{RequestLog, RequestRecord, WebhookFailure};
pub use resources::{ExtraSubresource, ResourceInfo};
pub use server::{KubeconfigError, Server, ServerOptions, StartError};
