//! The install manifests (deploy/): every kustomization we ship or document renders with the
//! real `kubectl kustomize` and is wired the way the binary expects — its own parser reads each
//! mode's ConfigMap, and the ports, names, certificate paths and security settings line up.
//! (`e2e_manifests` applies them to a real cluster; `doc_references` checks the code paths
//! their comments name.)

#[path = "deploy_manifests/renderings.rs"]
mod renderings;
#[path = "deploy_manifests/wiring.rs"]
mod wiring;

use renderings::{BIN, CASES, Certs, Expected, Kubectl, NAMESPACE, render};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kustomization_is_wired_the_way_the_binary_expects() {
    let kubectl = Kubectl::new(None);
    for &(source, expected) in CASES {
        let rendered = render(&kubectl, source).await;
        wiring::check_objects(&rendered.name, &rendered.objects, expected);
        wiring::check_with_binary(&rendered.name, &rendered.objects, expected);
    }
}
