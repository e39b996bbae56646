package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"ctxlab/activities/repo"
	"ctxlab/dataset/swebench"
	"ctxlab/grading/executor"
	"ctxlab/grading/imagebuild"
	"ctxlab/internal/flock"
	"ctxlab/internal/images"
	"ctxlab/jsonnet"
	"ctxlab/runfolder"
	"ctxlab/specs"
	"ctxlab/starter/exitcode"
	"ctxlab/starter/sweepclient"
)

// imagesBuildCommand is starter images build.
var imagesBuildCommand = commandDef[imagesBuildOptions, *imagesBuildOptions]{
	use:   "build --dataset FILE|--spec SPEC",
	short: "build instance images for the docker executor",
	long: "Builds an image per instance (the repository at base_commit in /testbed, offline) under the name the " +
		"docker executor looks up.",
	run: buildImages,
}

type imagesBuildOptions struct {
	dataset, base, namespace, repos, goproxy, docker string
	instances                                        map[string]bool
	rebuild                                          bool
	// spec, when set, names the experiment whose instances get images: its dataset (a generated one is made in
	// runs/NAME/dataset, as starter run makes it) and its grading settings, which flags given explicitly override.
	spec, runs string
	set        map[string]bool
	jsonnet.Flags
	// only is --instances, split into instances by complete.
	only string
}

func (o *imagesBuildOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.dataset, "dataset", "", "SWE-bench-format dataset `FILE` whose instances get images")
	fs.StringVar(&o.spec, "spec", "", "experiment `SPEC` whose instances get images, named and built as its grading "+
		"block says (namespace, goproxy, docker) from its dataset (a generated one is made in the run folder)")
	fs.StringVar(&o.runs, "runs", "runs", "folder of the run folders (with --spec: where a generated dataset is made)")
	o.Flags.Register(fs)
	fs.StringVar(&o.base, "base", "", "base `IMAGE` (default: ctxlab's offline base image of the repository's language, built from a debootstrap folder)")
	fs.StringVar(&o.namespace, "namespace", "", "image namespace, as grading.namespace / starter grade --namespace name it (default swebench)")
	fs.StringVar(&o.repos, "repos", specs.DefaultRepos, "each instance's repository: a folder or git URL `TEMPLATE` ({repo}, {owner}, {name}, {dataset_dir})")
	fs.StringVar(&o.goproxy, "goproxy", "", "GOPROXY the Go modules a repository requires are downloaded from into its image (`URL`; {dataset_dir} is the dataset's folder; default: the environment's)")
	fs.StringVar(&o.docker, "docker", "docker", "docker `PROGRAM`")
	fs.StringVar(&o.only, "instances", "", "comma-separated instance `IDS` to build (default: all)")
	fs.BoolVar(&o.rebuild, "rebuild", false, "rebuild images that exist already")
}

func (o *imagesBuildOptions) complete(rest []string, fs *pflag.FlagSet) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	if (o.dataset == "") == (o.spec == "") {
		return errors.New("one of --dataset and --spec is required")
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
	if o.only != "" {
		o.instances = map[string]bool{}
		for _, id := range strings.Split(o.only, ",") {
			o.instances[strings.TrimSpace(id)] = true
		}
	}
	return nil
}

func parseImagesBuild(args []string, stderr io.Writer) (imagesBuildOptions, error) {
	return imagesBuildCommand.parse(args, stderr)
}

// buildImages makes an instance image per dataset row: the repository at base_commit in /testbed (with, for Go,
// the modules it requires in the module cache, since containers have no network), on the base image, under the
// name the docker executor looks up (executor.ImageOf: the row's own image field, else executor.InstanceImage).
func buildImages(o imagesBuildOptions, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows, datasetDir, err := imageInstances(ctx, &o)
	if err != nil {
		fmt.Fprintf(stderr, "starter images build: %v\n", err)
		return exitcode.Usage
	}
	// The build's temporary containers carry this process's labels; those of builders (and graders) killed before
	// they could remove theirs are removed now.
	removed, err := executor.RemoveStaleContainers(ctx, o.docker)
	if err != nil {
		fmt.Fprintf(stderr, "starter images build: %v\n", err)
		return exitcode.Fail
	}
	for _, name := range removed {
		fmt.Fprintf(stderr, "starter images build: removed container %s of a process that no longer runs\n", name)
	}
	b := images.Builder{Docker: o.docker, Log: stderr, Labels: executor.ContainerLabels()}
	bases := map[string]string{}
	failed := 0
	for _, in := range rows {
		if o.instances != nil && !o.instances[in.InstanceID] {
			continue
		}
		name := executor.ImageOf(o.namespace, in)
		if !o.rebuild && b.Exists(ctx, name) {
			fmt.Fprintf(stdout, "%s\t%s\texists\n", in.InstanceID, name)
			continue
		}
		start := time.Now()
		if err := buildInstanceImage(ctx, o, b, bases, in, datasetDir, name); err != nil {
			fmt.Fprintf(stderr, "starter images build: instance %s: %v\n", in.InstanceID, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "%s\t%s\tbuilt in %s\n", in.InstanceID, name, time.Since(start).Round(100*time.Millisecond))
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "starter images build: %d image(s) failed\n", failed)
		return exitcode.Fail
	}
	return exitcode.OK
}

// imageInstances reads the instances to build images of (of o.spec, or of o.dataset) and the dataset's folder
// (absolute); every instance --instance names must be among them.
func imageInstances(ctx context.Context, o *imagesBuildOptions) ([]swebench.Instance, string, error) {
	var rows []swebench.Instance
	var err error
	if o.spec != "" {
		rows, err = fromSpec(ctx, o)
	} else {
		rows, err = swebench.ReadFile(o.dataset)
	}
	if err != nil {
		return nil, "", err
	}
	datasetDir, err := filepath.Abs(filepath.Dir(o.dataset))
	if err != nil {
		return nil, "", err
	}
	for id := range o.instances {
		if !containsInstance(rows, id) {
			return nil, "", fmt.Errorf("instance %s is not in %s", id, o.dataset)
		}
	}
	return rows, datasetDir, nil
}

// fromSpec reads the instances of o.spec the way starter run selects them (making a generated dataset in the run
// folder) and fills in the options the command line left to the spec: dataset, repos, namespace, goproxy, docker.
func fromSpec(ctx context.Context, o *imagesBuildOptions) ([]swebench.Instance, error) {
	e, err := compileSpec(o.spec, o.Flags)
	if err != nil {
		return nil, err
	}
	runDir := filepath.Join(o.runs, e.Name)
	// A starter run of the same spec may be making the dataset now: one at a time, as run itself does.
	unlock, err := flock.Lock(ctx, runfolder.PrepareLockPath(runDir), 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rows, err := sweepclient.PrepareDataset(e, runDir)
	if err != nil {
		return nil, err
	}
	o.dataset = e.Dataset.File
	fill := func(flagName string, dst *string, value string) {
		if !o.set[flagName] && value != "" {
			*dst = value
		}
	}
	fill("repos", &o.repos, e.Dataset.Repos)
	fill("namespace", &o.namespace, e.Grading.Namespace)
	fill("goproxy", &o.goproxy, e.Grading.GoProxy)
	fill("docker", &o.docker, e.Grading.Docker)
	return rows, nil
}

func containsInstance(rows []swebench.Instance, id string) bool {
	for _, in := range rows {
		if in.InstanceID == id {
			return true
		}
	}
	return false
}

// imagesPullCommand is starter images pull.
var imagesPullCommand = commandDef[imagesPullOptions, *imagesPullOptions]{
	use:   "pull --dataset FILE|--spec SPEC",
	short: "pull the instance images the docker executor needs and the engine lacks",
	long: "Pulls, concurrency at once, each instance's published image (SWE-bench's, SWE-rebench's, " +
		"Multi-SWE-bench's, or the row's own docker_image) that the engine lacks, as the harness does.",
	run: pullImages,
}

type imagesPullOptions struct {
	imagesBuildOptions
	concurrency int
}

func (o *imagesPullOptions) define(fs *pflag.FlagSet) {
	fs.StringVar(&o.dataset, "dataset", "", "SWE-bench-format dataset `FILE` whose instances' images are pulled")
	fs.StringVar(&o.spec, "spec", "", "experiment `SPEC` whose instances' images are pulled, named as its grading block says")
	fs.StringVar(&o.runs, "runs", "runs", "folder of the run folders (with --spec: where a generated dataset is made)")
	o.Flags.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "image namespace, as grading.namespace / starter grade --namespace name it (default swebench)")
	fs.StringVar(&o.docker, "docker", "docker", "docker `PROGRAM`")
	fs.StringVar(&o.only, "instances", "", "comma-separated instance `IDS` to pull (default: all)")
	fs.IntVar(&o.concurrency, "concurrency", 4, "images pulled at once")
}

func (o *imagesPullOptions) complete(rest []string, fs *pflag.FlagSet) error {
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d must be at least 1", o.concurrency)
	}
	return o.imagesBuildOptions.complete(rest, fs)
}

// pullImages pulls the images of the dataset's (or spec's) instances that the engine lacks.
func pullImages(o imagesPullOptions, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows, _, err := imageInstances(ctx, &o.imagesBuildOptions)
	if err != nil {
		fmt.Fprintf(stderr, "starter images pull: %v\n", err)
		return exitcode.Usage
	}
	var selected []swebench.Instance
	for _, in := range rows {
		if o.instances == nil || o.instances[in.InstanceID] {
			selected = append(selected, in)
		}
	}
	b := images.Builder{Docker: o.docker, Log: stderr}
	if err := imagebuild.PullMissing(ctx, b, o.namespace, selected, o.concurrency, stdout); err != nil {
		fmt.Fprintf(stderr, "starter images pull: %v\n", err)
		return exitcode.Fail
	}
	return exitcode.OK
}

// buildInstanceImage builds the image name of instance in, from its repository as --repos names it.
func buildInstanceImage(ctx context.Context, o imagesBuildOptions, b images.Builder, bases map[string]string,
	in swebench.Instance, datasetDir, name string) error {
	src, err := repo.SourceFor(o.repos, in, datasetDir)
	if err != nil {
		return err
	}
	goproxy := strings.ReplaceAll(o.goproxy, "{dataset_dir}", datasetDir)
	return imagebuild.Build(ctx, b, in, src, name, goproxy, o.base, bases)
}
