//! kube-sim: the Kubernetes API emulator the end-to-end tests run on (in progress).
