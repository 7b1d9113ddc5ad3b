// Package deploy holds what runs catalogbot for real: the kustomize base and
// overlays, the GitHub App manifest and the daemonless image build
// (deploy/imagebuild). Its tests render and check those files.
package deploy
