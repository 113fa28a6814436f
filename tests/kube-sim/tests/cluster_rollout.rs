//! The deployment controller as upstream writes: the revision annotation goes through the
//! status subresource, so a new Deployment rolls out at generation 1 (clients such as
//! `kubectl rollout status` compare `observedGeneration` with it).

mod common;

use std::time::Duration;

use common::{Sim, deployment_yaml, test_behaviour};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_deployment_rolls_out_at_generation_one_and_an_edit_makes_it_two() {
    let sim = Sim::start_cluster(test_behaviour()).await;
    sim.apply("web.yaml", &deployment_yaml("web", 2)).await;
    sim.wait_until("rolled out", Duration::from_secs(30), |s| {
        let d = s.get("apps/v1", "deployments", Some("default"), "web");
        d["status"]["availableReplicas"] == 2 && d["status"]["observedGeneration"] == 1
    })
    .await;
    let d = sim.get("apps/v1", "deployments", Some("default"), "web");
    assert_eq!(d["metadata"]["generation"], 1, "{}", d["metadata"]);
    assert_eq!(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");

    // A template edit is a spec change: generation 2, revision 2, observed in turn.
    sim.apply("web.yaml", &deployment_yaml("web", 2).replace("example/web:1.0", "example/web:2.0")).await;
    sim.wait_until("the second revision rolled out", Duration::from_secs(30), |s| {
        let d = s.get("apps/v1", "deployments", Some("default"), "web");
        d["status"]["observedGeneration"] == 2
            && d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    })
    .await;
    assert_eq!(sim.get("apps/v1", "deployments", Some("default"), "web")["metadata"]["generation"], 2);
}
