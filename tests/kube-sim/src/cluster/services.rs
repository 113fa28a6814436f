//! The Service registry's allocation step in the write pipeline (after mutating admission,
//! before validation, as upstream's `beginCreate`/`beginUpdate`): the rules are
//! [`crate::cluster_logic::service_ips`]; this module gathers what other Services hold and
//! reserves new values until the write has landed (or failed), so two concurrent creates never
//! get the same address or port.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::Cluster;
use crate::cluster_logic::service_ips::{Used, prepare};
use crate::error::ApiError;
use crate::resources::ResourceInfo;

/// Values handed out to writes that have not landed yet.
#[derive(Default)]
pub(super) struct Reservations {
    ips: HashSet<u32>,
    node_ports: HashSet<i64>,
}

/// Releases its reservations when dropped (the write is stored or refused by then).
pub(super) struct Reserved<'a> {
    reservations: &'a Mutex<Reservations>,
    ips: Vec<u32>,
    node_ports: Vec<i64>,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        let mut r = self.reservations.lock().unwrap_or_else(PoisonError::into_inner);
        for ip in &self.ips {
            r.ips.remove(ip);
        }
        for port in &self.node_ports {
            r.node_ports.remove(port);
        }
    }
}

fn random() -> u32 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

impl Cluster {
    /// Allocates a Service's addresses and ports in `object` (`old`: the stored Service on
    /// update). A dry run allocates without reserving, as upstream's dry-run allocator.
    pub(super) fn prepare_service(
        &self,
        info: &ResourceInfo,
        object: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Option<Reserved<'_>>, ApiError> {
        if !(info.storage_group.is_empty() && info.plural == "services") {
            return Ok(None);
        }
        let own = (object["metadata"]["namespace"].clone(), object["metadata"]["name"].clone());
        let reservations = &self.inner.service_reservations;
        // Listed under the lock: a concurrent write releases its reservation only once stored.
        let mut guard = reservations.lock().unwrap_or_else(PoisonError::into_inner);
        let page = self.store().list(&info.storage_key(), None, None, 0, &|_| true);
        let mut used = Used { ips: guard.ips.clone(), node_ports: guard.node_ports.clone() };
        for service in page
            .items
            .iter()
            .filter(|s| (s["metadata"]["namespace"].clone(), s["metadata"]["name"].clone()) != own)
        {
            used.add_service(service);
        }
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let allocated = prepare(object, old, &used, &mut random)
            .map_err(|errs| ApiError::invalid(&info.kind_label(), &info.group, &info.kind, &name, &errs))?;
        if dry_run {
            return Ok(None);
        }
        guard.ips.extend(allocated.ips.iter().copied());
        guard.node_ports.extend(allocated.node_ports.iter().copied());
        Ok(Some(Reserved { reservations, ips: allocated.ips, node_ports: allocated.node_ports }))
    }
}
