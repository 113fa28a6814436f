//! The write pipeline (create, update, patch, delete) in the upstream order:
//! decode/default → field ownership (`metadata.managedFields`) → mutating admission → system
//! fields → validation → validating admission → persist (k8s-semantics §0.3).

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::hooks::{AdmissionRequest, Operation};
use super::options::{Gvr, WriteOptions};
use super::scale::{apply_scale, to_scale};
use super::tracking::{ScaleChange, Tracking};
use crate::error::ApiError;
use crate::meta::{meta_mut, meta_str, new_uid, now_rfc3339, random_suffix};
use crate::resources::{ResourceInfo, crd_resources};
use crate::schema::Schema;
use crate::store::{CommitError, Mutation, object_rv};

const MAX_RETRIES: usize = 16;

/// The subresource a write targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Main,
    Status,
    Scale,
    /// `namespaces/NAME/finalize` (PUT only over HTTP).
    Finalize,
}

impl Target {
    pub(super) fn parse(info: &ResourceInfo, sub: Option<&str>) -> Result<Self, ApiError> {
        match sub {
            None | Some("") => Ok(Self::Main),
            Some("status") if info.status => Ok(Self::Status),
            Some("scale") if info.scale.is_some() => Ok(Self::Scale),
            Some("finalize") if super::namespaces::is_namespaces(info) => Ok(Self::Finalize),
            Some(_) => Err(ApiError::no_route()),
        }
    }
    pub(super) fn name(self) -> Option<String> {
        match self {
            Self::Main => None,
            Self::Status => Some("status".into()),
            Self::Scale => Some("scale".into()),
            Self::Finalize => Some("finalize".into()),
        }
    }
}

/// An update attempt failed because the object changed meanwhile; retry from a fresh read.
enum Attempt<T> {
    Done(T),
    Retry,
}

pub(super) fn check_type_meta(info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    if !object.is_object() {
        return Err(ApiError::bad_request("the body of the request was not a JSON object"));
    }
    let expected = info.api_version();
    match object["apiVersion"].as_str() {
        None | Some("") => object["apiVersion"] = json!(expected),
        Some(v) if v == expected => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
    }
    match object["kind"].as_str() {
        None | Some("") => object["kind"] = json!(info.kind),
        Some(k) if k == info.kind => {}
        // Upstream decodes the body as its own kind, then fails to convert it (the Go packages
        // are the version and the group's first label, `core` for the core group).
        Some(k) => {
            let (version, kind) = (info.version.as_str(), info.kind.as_str());
            let internal = info.group.split('.').next().filter(|g| !g.is_empty()).unwrap_or("core");
            return Err(ApiError::bad_request(format!(
                "{k} in version \"{version}\" cannot be handled as a {kind}: converting ({version}.{k}) to ({internal}.{kind}): unknown conversion"
            )));
        }
    }
    Ok(())
}

fn strip_server_fields(object: &mut Value) {
    let meta = meta_mut(object);
    for f in [
        "selfLink",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        meta.remove(f);
    }
}

fn initial_status(info: &ResourceInfo) -> Option<Value> {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => Some(json!({"phase": "Pending"})),
        ("", "namespaces") => Some(json!({"phase": "Active"})),
        ("", "services") => Some(json!({"loadBalancer": {}})),
        ("apps", "deployments") => Some(json!({})),
        // The zero status upstream writes (its slice and counter are not `omitempty`).
        ("autoscaling", "horizontalpodautoscalers") => {
            Some(json!({"currentMetrics": null, "desiredReplicas": 0}))
        }
        // The zero statuses upstream's strategies reset new objects to (non-omitempty counters).
        ("apps", "replicasets") => Some(json!({"replicas": 0})),
        ("apps", "statefulsets") => Some(json!({"availableReplicas": 0, "replicas": 0})),
        ("apps", "daemonsets") => Some(
            json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}),
        ),
        ("policy", "poddisruptionbudgets") => Some(
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        ),
        _ if info.status => None,
        _ => None,
    }
}

/// Whether the change from `old` to `new` bumps `metadata.generation`.
fn generation_changes(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    if !info.builtin {
        let strip = |v: &Value| {
            let mut c = v.as_object().cloned().unwrap_or_default();
            c.remove("metadata");
            c.remove("status");
            c
        };
        return strip(old) != strip(new);
    }
    if info.plural == "deployments" && old["metadata"]["annotations"] != new["metadata"]["annotations"] {
        return true;
    }
    // Webhook configurations have no spec: their webhooks are it.
    if info.group == "admissionregistration.k8s.io" {
        return old["webhooks"] != new["webhooks"];
    }
    old["spec"] != new["spec"]
}

impl Cluster {
    fn options_json(opts: &WriteOptions, kind: &str) -> Value {
        let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if opts.dry_run {
            o["dryRun"] = json!(["All"]);
        }
        if let Some(fm) = &opts.field_manager {
            o["fieldManager"] = json!(fm);
        }
        o
    }

    async fn admit(&self, request: AdmissionRequest, object: &mut Value, skip: bool) -> Result<(), ApiError> {
        if skip {
            return Ok(());
        }
        let Some(hook) = self.admission_hook() else { return Ok(()) };
        let mut request = request;
        request.object = Some(object.clone());
        if let Some(mutated) = hook.mutate(&request).await? {
            *object = mutated;
        }
        Ok(())
    }

    pub(super) async fn admit_validate(&self, request: AdmissionRequest, skip: bool) -> Result<(), ApiError> {
        if skip {
            return Ok(());
        }
        match self.admission_hook() {
            Some(hook) => hook.validate(&request).await,
            None => Ok(()),
        }
    }

    fn check_namespace_exists(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<(), ApiError> {
        let key = crate::resources::StorageKey { group: String::new(), plural: "namespaces".into() };
        match self.store().get(&key, "", ns) {
            None => Err(ApiError::not_found("", "namespaces", ns)),
            // NamespaceLifecycle looks at the phase (set with the deletion timestamp).
            Some(n)
                if n["status"]["phase"] == "Terminating" || !n["metadata"]["deletionTimestamp"].is_null() =>
            {
                let mut err = ApiError::forbidden(
                    &info.group,
                    &info.plural,
                    name,
                    &format!("unable to create new content in namespace {ns} because it is being terminated"),
                );
                if let Some(Value::Object(d)) = err.details.as_mut() {
                    d.insert("causes".into(), json!([{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]));
                }
                Err(err)
            }
            Some(_) => Ok(()),
        }
    }

    /// CREATE. `namespace` is the request's namespace (required for namespaced resources).
    pub async fn create(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        object: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.resource(gvr)?;
        let mut object = object;
        check_type_meta(&info, &mut object)?;
        // Unknown fields go at decoding, before anything else looks at the object.
        crate::schema::check_object(
            &info.kind,
            &info.version,
            Schema::of(&info),
            &mut object,
            opts.field_validation,
        )?;
        let created = self.create_checked(&info, namespace, object, opts, Tracking::Update).await?;
        Ok(Self::served_form(&info, created))
    }

    pub(super) async fn create_checked(
        &self,
        info: &Arc<ResourceInfo>,
        namespace: Option<&str>,
        mut object: Value,
        opts: &WriteOptions,
        tracking: Tracking,
    ) -> Result<Arc<Value>, ApiError> {
        if info.group == "events.k8s.io" {
            object = crate::event_mapping::to_core(&object);
        }
        let ns = if info.namespaced {
            let body_ns = meta_str(&object, "namespace").to_string();
            let ns = match namespace.filter(|n| !n.is_empty()) {
                Some(n) => n.to_string(),
                None if !body_ns.is_empty() => body_ns.clone(),
                None => "default".to_string(),
            };
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta_mut(&mut object).insert("namespace".into(), json!(ns));
            ns
        } else {
            meta_mut(&mut object).remove("namespace");
            String::new()
        };
        match meta_str(&object, "resourceVersion") {
            "" => {}
            rv if rv.parse::<u64>().is_ok() => {
                return Err(ApiError::plain_internal(
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            _ => {
                meta_mut(&mut object).remove("resourceVersion");
            }
        }
        let requested_name = meta_str(&object, "name").to_string();
        if info.namespaced {
            self.check_namespace_exists(info, &ns, &requested_name)?;
        }
        crate::defaults::apply(&info.storage_group, &info.plural, &mut object);
        strip_server_fields(&mut object);
        // The creator owns what it set and what defaulting added (upstream tracks the decoded
        // object, before the strategy's and admission's changes).
        if tracking == Tracking::Update && !opts.skip_field_tracking {
            let entries = self.with_write(info, Target::Main, opts, |w| {
                crate::managed_fields::track_update(w, None, &object)
            });
            crate::managed_fields::set_managed_fields(&mut object, entries);
        }
        crate::defaults::prepare_for_create(&info.storage_group, &info.plural, &mut object);
        if !opts.keep_status
            && let Value::Object(m) = &mut object
        {
            if info.status {
                m.remove("status");
            }
            if let Some(status) = initial_status(info) {
                m.insert("status".into(), status);
            }
            super::crds::prepare_create(info, &mut object);
        }
        if info.storage_group.is_empty() && info.plural == "pods" && !opts.skip_admission {
            crate::defaults::admit_new_pod(&mut object);
            if object["status"].is_object() {
                object["status"]["qosClass"] = json!(crate::defaults::pod_qos_class(&object));
            }
        }
        let request = AdmissionRequest {
            resource: info.clone(),
            subresource: None,
            operation: Operation::Create,
            namespace: ns.clone(),
            name: requested_name.clone(),
            object: None,
            old_object: None,
            dry_run: opts.dry_run,
            options: Self::options_json(opts, "CreateOptions"),
        };
        self.admit(request.clone(), &mut object, opts.skip_admission).await?;
        // System fields (registry BeforeCreate / PrepareForCreate).
        let generate_name = meta_str(&object, "generateName").to_string();
        let meta = meta_mut(&mut object);
        if meta.get("name").and_then(Value::as_str).unwrap_or_default().is_empty()
            && !generate_name.is_empty()
        {
            meta.insert("name".into(), json!(format!("{generate_name}{}", random_suffix())));
        }
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        if info.tracks_generation {
            meta.insert("generation".into(), json!(1));
        }
        let _reserved = self.prepare_service(info, &mut object, None, opts.dry_run)?;
        crate::validation::validate(info, &object, None)?;
        let name = meta_str(&object, "name").to_string();
        let mut validating = request;
        validating.name = name.clone();
        validating.object = Some(object.clone());
        self.admit_validate(validating, opts.skip_admission).await?;
        if opts.dry_run {
            return Ok(Arc::new(object));
        }
        let stored = self
            .store()
            .commit(Mutation::Create { key: info.storage_key(), object })
            .map_err(|_| ApiError::already_exists(&info.group, &info.plural, &name))?;
        self.after_write(info, &stored, false);
        if super::crds::is_crd(info) {
            self.sync_crd_group(stored["spec"]["group"].as_str().unwrap_or_default());
        }
        Ok(stored)
    }

    /// Keeps the catalogue in step with CRD objects.
    pub(super) fn after_write(&self, info: &ResourceInfo, object: &Value, deleted: bool) {
        if info.group != "apiextensions.k8s.io" || info.plural != "customresourcedefinitions" {
            return;
        }
        let group = object["spec"]["group"].as_str().unwrap_or_default();
        let plural = object["spec"]["names"]["plural"].as_str().unwrap_or_default();
        self.catalogue().remove_custom(group, plural);
        if !deleted {
            for r in crd_resources(object) {
                self.catalogue().upsert(r);
            }
        }
    }

    /// UPDATE (PUT) of the object or of its `status`/`scale` subresource. For `scale` the body
    /// and the answer are `autoscaling/v1 Scale`.
    pub async fn update(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.resource(gvr)?;
        let ns = Self::check_namespace_arg(&info, namespace)?;
        let target = Target::parse(&info, subresource)?;
        let mut body = body;
        if target == Target::Scale {
            crate::schema::check_object("Scale", "v1", Schema::scale(), &mut body, opts.field_validation)?;
            crate::validation::validate_scale(name, &body)?;
        } else {
            check_type_meta(&info, &mut body)?;
            crate::schema::check_object(
                &info.kind,
                &info.version,
                Schema::of(&info),
                &mut body,
                opts.field_validation,
            )?;
            if info.group == "events.k8s.io" {
                body = crate::event_mapping::to_core(&body);
            }
            let body_name = meta_str(&body, "name");
            if !body_name.is_empty() && body_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            let body_ns = meta_str(&body, "namespace");
            if info.namespaced && !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        let precondition: Option<u64> = match meta_str(&body, "resourceVersion") {
            "" => None,
            rv => Some(
                rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
            ),
        };
        if precondition.is_none() && !info.allow_unconditional_update {
            // Upstream leaves the kind empty here and puts the resource in it (kubernetes#18526).
            return Err(ApiError::invalid(
                &info.group_resource(),
                &info.group,
                &info.plural,
                name,
                &[crate::error::FieldError::invalid(
                    "metadata.resourceVersion",
                    "0",
                    "must be specified for an update",
                )],
            ));
        }
        let body_uid = meta_str(&body, "uid").to_string();
        let result = self
            .guaranteed_update(&info, &ns, name, target, opts, |current| {
                if let Some(rv) = precondition
                    && object_rv(current) != rv
                {
                    return Err(ApiError::optimistic_lock(&info.group, &info.plural, name));
                }
                let current_uid = meta_str(current, "uid");
                if !body_uid.is_empty() && body_uid != current_uid {
                    return Err(ApiError::conflict(
                        &info.group,
                        &info.plural,
                        name,
                        &format!("Precondition failed: UID in precondition: {body_uid}, UID in object meta: {current_uid}"),
                    ));
                }
                match (target, &info.scale) {
                    (Target::Scale, Some(paths)) => {
                        let (object, _) = self.scale_write(&info, paths, current, ScaleChange::To(&body), opts)?;
                        Ok((object, Tracking::Keep))
                    }
                    _ => Ok((body.clone(), Tracking::Update)),
                }
            })
            .await?;
        Ok(self.answer_form(&info, target, result))
    }

    pub(super) fn answer_form(&self, info: &ResourceInfo, target: Target, object: Arc<Value>) -> Arc<Value> {
        match (target, &info.scale) {
            (Target::Scale, Some(paths)) => Arc::new(to_scale(paths, &object)),
            _ => Self::served_form(info, object),
        }
    }

    /// GET of the `scale` or `status` subresource.
    pub fn get_subresource(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        subresource: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let info = self.resource(gvr)?;
        let target = Target::parse(&info, Some(subresource))?;
        let object = self.get(gvr, namespace, name)?;
        Ok(self.answer_form(&info, target, object))
    }

    /// PATCH of the object or a subresource. Returns the answer and whether it created the
    /// Read-modify-write with retries on concurrent changes (upstream `GuaranteedUpdate`).
    /// `build` turns the current object into the requested new one (before status/spec
    /// separation and system fields) and says how its managed fields are decided.
    pub(super) async fn guaranteed_update(
        &self,
        info: &Arc<ResourceInfo>,
        ns: &str,
        name: &str,
        target: Target,
        opts: &WriteOptions,
        mut build: impl FnMut(&Arc<Value>) -> Result<(Value, Tracking), ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        for _ in 0..MAX_RETRIES {
            let current = self
                .store()
                .get(&info.storage_key(), ns, name)
                .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
            let (requested, tracking) = build(&current)?;
            match self.finish_update(info, target, &current, requested, opts, tracking).await? {
                Attempt::Done(v) => return Ok(v),
                Attempt::Retry => continue,
            }
        }
        Err(ApiError::conflict(&info.group, &info.plural, name, crate::error::OPTIMISTIC_LOCK_MSG))
    }

    async fn finish_update(
        &self,
        info: &Arc<ResourceInfo>,
        target: Target,
        current: &Arc<Value>,
        requested: Value,
        opts: &WriteOptions,
        tracking: Tracking,
    ) -> Result<Attempt<Arc<Value>>, ApiError> {
        let sent_entries = requested.get("metadata").and_then(|m| m.get("managedFields")).cloned();
        let mut new = match target {
            Target::Status => {
                let mut n = (**current).clone();
                n["status"] = requested.get("status").cloned().unwrap_or(Value::Null);
                // Status strategies keep the request's annotations (Deployments, ReplicaSets,
                // PDBs...), except the Pod's, which resets its metadata to the stored one.
                if info.plural != "pods"
                    && let Some(annotations) = requested.pointer("/metadata/annotations")
                {
                    n["metadata"]["annotations"] = annotations.clone();
                }
                if n["status"].is_null()
                    && let Value::Object(m) = &mut n
                {
                    m.remove("status");
                }
                n
            }
            Target::Finalize => {
                let mut n = requested;
                super::namespaces::prepare_update(info, target, &mut n, current);
                n
            }
            Target::Main | Target::Scale => {
                let mut n = requested;
                if info.status && !opts.keep_status {
                    match current.get("status") {
                        Some(s) => n["status"] = s.clone(),
                        None => {
                            if let Value::Object(m) = &mut n {
                                m.remove("status");
                            }
                        }
                    }
                    super::crds::prepare_update(info, &mut n);
                }
                crate::defaults::apply(&info.storage_group, &info.plural, &mut n);
                crate::defaults::prepare_for_update(&info.storage_group, &info.plural, &mut n, current);
                super::namespaces::prepare_update(info, target, &mut n, current);
                n
            }
        };
        if !new.is_object() {
            return Err(ApiError::bad_request("the body of the request was not a JSON object"));
        }
        // Fields the client cannot change.
        new["apiVersion"] = current["apiVersion"].clone();
        new["kind"] = current["kind"].clone();
        let cur_meta = &current["metadata"];
        let meta = meta_mut(&mut new);
        meta.remove("managedFields");
        meta.remove("selfLink");
        for f in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match cur_meta.get(f) {
                Some(v) => meta.insert(f.into(), v.clone()),
                None => meta.remove(f),
            };
        }
        // Webhooks see what the request addresses: a `/scale` update is an update of a Scale.
        let scale_paths = info.scale.as_ref().filter(|_| target == Target::Scale);
        let as_admitted = |object: &Value| match scale_paths {
            Some(paths) => to_scale(paths, object),
            None => object.clone(),
        };
        // Field ownership, before admission as upstream's handlers track it.
        let entries = match tracking {
            Tracking::Keep => sent_entries,
            Tracking::Update if opts.skip_field_tracking => {
                current.pointer("/metadata/managedFields").cloned()
            }
            Tracking::Update => {
                if let Some(sent) = sent_entries {
                    meta_mut(&mut new).insert("managedFields".into(), sent);
                }
                self.with_write(info, target, opts, |w| {
                    crate::managed_fields::track_update(w, Some(current), &new)
                })
            }
        };
        crate::managed_fields::set_managed_fields(&mut new, entries);
        let request = AdmissionRequest {
            resource: info.clone(),
            subresource: target.name(),
            operation: Operation::Update,
            namespace: meta_str(current, "namespace").to_string(),
            name: meta_str(current, "name").to_string(),
            object: None,
            old_object: Some(as_admitted(current)),
            dry_run: opts.dry_run,
            options: Self::options_json(opts, "UpdateOptions"),
        };
        match scale_paths {
            Some(paths) => {
                let mut scale = to_scale(paths, &new);
                self.admit(request.clone(), &mut scale, opts.skip_admission).await?;
                new = apply_scale(paths, &new, &scale);
            }
            None => self.admit(request.clone(), &mut new, opts.skip_admission).await?,
        }
        let _reserved = match target {
            Target::Main => self.prepare_service(info, &mut new, Some(current), opts.dry_run)?,
            Target::Status | Target::Scale | Target::Finalize => None,
        };
        // Only the main resource (and scale) bumps it: no status strategy does.
        if info.tracks_generation
            && !matches!(target, Target::Status)
            && generation_changes(info, current, &new)
        {
            let generation = current["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            meta_mut(&mut new).insert("generation".into(), json!(generation));
        }
        match target {
            Target::Status => crate::validation::validate_status(info, &new, current)?,
            Target::Main | Target::Scale | Target::Finalize => {
                crate::validation::validate(info, &new, Some(current))?;
            }
        }
        let mut validating = request;
        validating.object = Some(as_admitted(&new));
        self.admit_validate(validating, opts.skip_admission).await?;
        if new == **current {
            return Ok(Attempt::Done(current.clone()));
        }
        if opts.dry_run {
            return Ok(Attempt::Done(Arc::new(new)));
        }
        let expected_rv = object_rv(current);
        // Removing the last finalizer completes a deletion whose grace period is over.
        let finalized = !new["metadata"]["deletionTimestamp"].is_null()
            && new["metadata"]["finalizers"].as_array().is_none_or(|f| f.is_empty())
            && new["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) == 0
            && super::namespaces::may_delete_on_update(info, &new);
        // A write that empties the finalizers of a deleted object deletes it and answers the
        // object as written (upstream's `deleteWithoutFinalizers` returns the updated object).
        let (mutation, answer) = if finalized {
            let mutation = Mutation::Delete {
                key: info.storage_key(),
                namespace: meta_str(current, "namespace").to_string(),
                name: meta_str(current, "name").to_string(),
                expected_rv,
            };
            (mutation, Some(Arc::new(new)))
        } else {
            (Mutation::Update { key: info.storage_key(), object: new, expected_rv }, None)
        };
        match self.store().commit(mutation) {
            Ok(stored) => {
                self.after_write(info, &stored, finalized);
                if super::crds::is_crd(info) {
                    self.sync_crd_group(stored["spec"]["group"].as_str().unwrap_or_default());
                }
                Ok(Attempt::Done(answer.unwrap_or(stored)))
            }
            Err(CommitError::Conflict) => Ok(Attempt::Retry),
            Err(CommitError::NotFound) => {
                Err(ApiError::not_found(&info.group, &info.plural, meta_str(current, "name")))
            }
            Err(CommitError::AlreadyExists) => Ok(Attempt::Retry),
        }
    }
}
