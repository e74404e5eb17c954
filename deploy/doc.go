// Package deploy holds what an operator deploys scout's master with, and
// the tests that check it against the real programs:
//
//   - Containerfile and build-image: the static binary on an empty base
//     image, built offline with podman, run as a numeric unprivileged user;
//   - compose.yaml: a fleet of three masters on Redis;
//   - systemd/: a hardened unit, and a template unit for fleet instances,
//     checked with systemd-analyze verify;
//   - prometheus/alerts.yaml and grafana/scout.json: alerting rules and a
//     dashboard naming only metrics a running master exports, checked with
//     promtool.
//
// The package has no code of its own; its tests need podman, systemd-analyze,
// promtool and redis-server, skip without them and fail without them under
// CI=1.
package deploy
