// demo-docker: the demo experiment (demo.jsonnet), graded in containers of a Docker engine instead of worktrees on
// this machine. The demo publishes no images, so build them first, offline, from the spec (README, "Grading in
// containers"):
//
//   starter images build --spec specs/demo-docker.jsonnet     # the demo's 11 instance images, once per machine
//   starter run specs/demo-docker.jsonnet
//
// The images are named ctxlabdemo/sweb.eval.x86_64.<instance>:latest, the harness's names under the namespace below;
// they hold each repository at its base commit in /testbed (and, for Go, the modules it requires, since containers
// have no network).
(import 'demo.jsonnet') + {
  name: 'demo-docker',
  grading+: { executor: 'docker', namespace: 'ctxlabdemo' },
}
