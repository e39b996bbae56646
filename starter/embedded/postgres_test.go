package embedded

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/log"

	"ctxlab/testkit/pgtest"
)

// TestStartPostgres starts a server on an empty PostgreSQL cluster (databases, schemas and namespace created), starts
// a workflow, stops the server and starts it again on the same databases: the schema is reused and the workflow is
// still there. Then the two states a database can be found in besides those: a schema creation cut short (version
// 0.0 and some tables) is created again, and a database holding other tables is refused, untouched.
func TestStartPostgres(t *testing.T) {
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	o := PostgresOptions{URL: pg.URL("temporal"), Address: net.JoinHostPort(host, strconv.Itoa(port)),
		Namespace: "ctxlab", LogFile: filepath.Join(t.TempDir(), "temporal.log")}
	srv, err := StartPostgres(ctx, o)
	if err != nil {
		t.Fatalf("first start on an empty cluster: %v", err)
	}
	if srv.HostPort() != o.Address {
		t.Errorf("frontend at %s, asked for %s", srv.HostPort(), o.Address)
	}
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: "ctxlab", Logger: quietSDKLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "survivor", TaskQueue: "nobody"}, "Nothing")
	if err != nil {
		t.Fatalf("starting a workflow: %v", err)
	}
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	srv, err = StartPostgres(ctx, o)
	if err != nil {
		t.Fatalf("restart on the databases of the first start: %v", err)
	}
	c, err = client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: "ctxlab", Logger: quietSDKLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.DescribeWorkflowExecution(ctx, "survivor", "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() != run.GetRunID() {
		t.Errorf("the workflow started before the restart: %v, %v", desc, err)
	}
	// Visibility is on PostgreSQL too: the list comes from its database.
	list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "ctxlab"})
	if err != nil || len(list.GetExecutions()) != 1 {
		t.Errorf("listing workflows after the restart: %v, %v", list, err)
	}
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	// A creation cut short: version 0.0 recorded, some of the schema's tables made.
	halfCfg, err := postgresConfig(pg.URL("half"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := openPostgres(halfCfg, log.NewNoopLogger())
	if err != nil {
		t.Fatal(err)
	}
	updates, err := schemaUpdates(pgSchema, schemaCreating)
	if err != nil || len(updates) == 0 {
		t.Fatalf("the embedded schema: %d updates, %v", len(updates), err)
	}
	for _, stmt := range append([]string{"CREATE TABLE schema_version(version_partition INT not null, db_name " +
		"VARCHAR(255) not null, creation_time TIMESTAMP, curr_version VARCHAR(64), min_compatible_version " +
		"VARCHAR(64), PRIMARY KEY (version_partition, db_name))"}, updates[0].statements[:3]...) {
		if err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.UpdateSchemaVersion("half", schemaCreating, schemaCreating); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	o.URL = pg.URL("half")
	srv, err = StartPostgres(ctx, o)
	if err != nil {
		t.Fatalf("start on a database whose schema creation was cut short: %v", err)
	}
	_ = srv.Stop()

	// A database of something else: refused, its table kept.
	otherCfg, err := postgresConfig(pg.URL("other"))
	if err != nil {
		t.Fatal(err)
	}
	if db, err = openPostgres(otherCfg, log.NewNoopLogger()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec("CREATE TABLE precious (id INT)"); err != nil {
		t.Fatal(err)
	}
	o.URL = pg.URL("other")
	srv, err = StartPostgres(ctx, o)
	if err == nil {
		_ = srv.Stop()
		t.Fatal("the server started on a database holding another application's table")
	}
	if !strings.Contains(err.Error(), "precious") {
		t.Errorf("the refusal does not name the table it found: %v", err)
	}
	if tables, err := db.ListTables("other"); err != nil || len(tables) != 1 {
		t.Errorf("tables of the refused database: %v, %v", tables, err)
	}
}

func TestPostgresConfig(t *testing.T) {
	t.Setenv("PGPASSWORD", "from-env")
	cfg, err := postgresConfig("postgres://me:s3cret@db.example/temporal?sslmode=require")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "me" || cfg.Password != "s3cret" || cfg.ConnectAddr != "db.example:5432" ||
		cfg.DatabaseName != "temporal" || cfg.ConnectAttributes["sslmode"] != "require" {
		t.Errorf("parsed %+v", cfg)
	}
	if cfg, err = postgresConfig("postgres://me@127.0.0.1:5433/t"); err != nil || cfg.Password != "from-env" {
		t.Errorf("password from $PGPASSWORD: %+v, %v", cfg, err)
	}
	for _, bad := range []string{"mysql://me@h/db", "postgres://h:1/db", "postgres://me@h:1/", "postgres://me@h/a/b"} {
		if _, err := postgresConfig(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	_, err = postgresConfig("mysql://me:s3cret@h/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an error shows the password: %v", err)
	}
}
