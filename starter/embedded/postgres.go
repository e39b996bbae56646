package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	dbschema "go.temporal.io/server/schema"
	"go.temporal.io/server/schema/sqlite"
)

// PostgresOptions configure a standalone server on PostgreSQL, as a deployment runs it: its own process, its state
// in a database server that outlives it.
type PostgresOptions struct {
	// URL is the database: postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=...]. The password may come from
	// $PGPASSWORD instead. Visibility records go to the database DB_visibility beside it. Both are created when
	// missing (the user then needs the CREATEDB privilege), and so are their schemas.
	URL string
	// Address is where the frontend listens (HOST:PORT); the other services listen on free ports of the same host.
	Address string
	// Namespace is created when missing.
	Namespace string
	// LogFile receives the server's logs ("" drops them).
	LogFile string
}

// visibilitySuffix names the visibility database after the main one: the two schemas each keep a schema_version row
// under the database's name, so they cannot share one.
const visibilitySuffix = "_visibility"

// Embedded schema trees of the server module for PostgreSQL 12 and later.
const (
	pgSchema           = "postgresql/v12/temporal"
	pgVisibilitySchema = "postgresql/v12/visibility"
)

// StartPostgres creates the databases, their schemas and the namespace where missing (a database left by an
// earlier start is reused as it is, and brought up to the server's schema version) and starts every service. It
// returns once the frontend answers.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	mainCfg, err := postgresConfig(o.URL)
	if err != nil {
		return nil, err
	}
	visCfg := *mainCfg
	visCfg.DatabaseName = mainCfg.DatabaseName + visibilitySuffix
	host, portText, err := net.SplitHostPort(o.Address)
	if err != nil {
		return nil, fmt.Errorf("temporal server: address %q: %w", o.Address, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("temporal server: address %q: bad port", o.Address)
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("temporal server: address %q: want an IP address to listen on", o.Address)
	}
	logger, err := fileLogger(o.LogFile)
	if err != nil {
		return nil, err
	}
	for _, db := range []struct {
		cfg    *config.SQL
		schema string
	}{{mainCfg, pgSchema}, {&visCfg, pgVisibilitySchema}} {
		if err := setupPostgres(db.cfg, db.schema, logger); err != nil {
			return nil, err
		}
	}
	nsCfg, err := sqlite.NewNamespaceConfig(clusterName, o.Namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	// CreateNamespaces writes the namespace row through the generic SQL persistence, whatever the plugin (its
	// package is named after SQLite only because the embedded server needed it first).
	if err := sqlite.CreateNamespaces(mainCfg, nsCfg); err != nil {
		return nil, fmt.Errorf("temporal server: creating namespace %q in %s: %w", o.Namespace,
			describeDB(mainCfg), err)
	}
	const (
		mainStore       = "postgres"
		visibilityStore = "postgres-visibility"
	)
	l := launch{
		persistence: config.Persistence{
			DefaultStore:     mainStore,
			VisibilityStore:  visibilityStore,
			NumHistoryShards: 4,
			DataStores: map[string]config.DataStore{
				mainStore: {SQL: mainCfg}, visibilityStore: {SQL: &visCfg},
			},
		},
		host: host, database: describeDB(mainCfg), logFile: o.LogFile, namespace: o.Namespace,
	}
	return l.start(ctx, Ports{Frontend: port}, true)
}

// postgresConfig turns a postgres:// URL into the server's SQL settings.
func postgresConfig(raw string) (*config.SQL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("temporal server: database URL: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("temporal server: database URL %s: want postgres://USER@HOST:PORT/DB", u.Redacted())
	}
	db := strings.TrimPrefix(u.Path, "/")
	if u.User == nil || u.User.Username() == "" || u.Host == "" || db == "" || strings.Contains(db, "/") {
		return nil, fmt.Errorf("temporal server: database URL %s: want postgres://USER@HOST:PORT/DB", u.Redacted())
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	password, ok := u.User.Password()
	if !ok {
		password = os.Getenv("PGPASSWORD")
	}
	cfg := &config.SQL{
		PluginName:        postgresql.PluginName,
		User:              u.User.Username(),
		Password:          password,
		ConnectAddr:       addr,
		DatabaseName:      db,
		ConnectAttributes: map[string]string{},
		MaxConns:          20,
		MaxIdleConns:      20,
	}
	for k, v := range u.Query() {
		cfg.ConnectAttributes[k] = v[len(v)-1]
	}
	return cfg, nil
}

// describeDB names a database in messages: user, address and name, never the password.
func describeDB(cfg *config.SQL) string {
	return fmt.Sprintf("postgres://%s@%s/%s", cfg.User, cfg.ConnectAddr, cfg.DatabaseName)
}

// schemaCreating is the schema version recorded before the first schema file runs; the last file that runs replaces
// it, so a creation that a kill cut short is recognizable.
const schemaCreating = "0.0"

// setupPostgres creates the database when missing and its schema up to the version this server needs. A database
// already at some version is updated from there; one whose creation was cut short (version 0.0: it was empty when
// the creation began) is emptied and created again; one that holds tables but no Temporal schema is refused rather
// than written into.
func setupPostgres(cfg *config.SQL, schemaName string, logger log.Logger) error {
	where := describeDB(cfg)
	db, err := openPostgres(cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	version, versionErr := db.ReadSchemaVersion(cfg.DatabaseName)
	switch {
	case versionErr == nil && version == schemaCreating:
		if err := db.DropAllTables(cfg.DatabaseName); err != nil {
			return fmt.Errorf("temporal server: emptying %s, whose schema creation was cut short: %w", where, err)
		}
		version, versionErr = "", errors.New("no schema")
	case versionErr != nil:
		tables, err := db.ListTables(cfg.DatabaseName)
		if err != nil {
			return fmt.Errorf("temporal server: listing the tables of %s: %w", where, err)
		}
		tables = slices.DeleteFunc(tables, func(t string) bool {
			return t == "schema_version" || t == "schema_update_history"
		})
		if len(tables) > 0 {
			return fmt.Errorf("temporal server: %s holds %d tables (%s, ...) but no Temporal schema version: give "+
				"an empty database or one a Temporal server created", where, len(tables), tables[0])
		}
	}
	if versionErr != nil {
		if err := db.CreateSchemaVersionTables(); err != nil {
			return fmt.Errorf("temporal server: schema version tables in %s: %w", where, err)
		}
		if err := db.UpdateSchemaVersion(cfg.DatabaseName, schemaCreating, schemaCreating); err != nil {
			return fmt.Errorf("temporal server: recording the schema creation in %s: %w", where, err)
		}
		version = schemaCreating
	}
	updates, err := schemaUpdates(schemaName, version)
	if err != nil {
		return err
	}
	for _, u := range updates {
		for _, stmt := range u.statements {
			if err := db.Exec(stmt); err != nil {
				return fmt.Errorf("temporal server: schema %s version %s in %s: %w", schemaName, u.CurrVersion, where, err)
			}
		}
		if err := db.UpdateSchemaVersion(cfg.DatabaseName, u.CurrVersion, u.MinCompatibleVersion); err != nil {
			return fmt.Errorf("temporal server: recording schema version %s in %s: %w", u.CurrVersion, where, err)
		}
		if err := db.WriteSchemaUpdateLog(version, u.CurrVersion, "", u.Description); err != nil {
			return fmt.Errorf("temporal server: schema update log of %s: %w", where, err)
		}
		version = u.CurrVersion
	}
	return nil
}

// schemaUpdate is one version folder of an embedded schema: its manifest and its statements.
type schemaUpdate struct {
	CurrVersion          string
	MinCompatibleVersion string
	Description          string
	SchemaUpdateCqlFiles []string
	version              [2]int
	statements           []string
}

// schemaUpdates reads the embedded schema's versions newer than current, oldest first.
func schemaUpdates(schemaName, current string) ([]schemaUpdate, error) {
	from, err := parseVersion(current)
	if err != nil {
		return nil, fmt.Errorf("temporal server: schema version %q in the database: %w", current, err)
	}
	assets := dbschema.Assets()
	dir := path.Join(schemaName, "versioned")
	entries, err := fs.ReadDir(assets, dir)
	if err != nil {
		return nil, fmt.Errorf("temporal server: embedded schema %s: %w", dir, err)
	}
	var updates []schemaUpdate
	for _, e := range entries {
		v, err := parseVersion(e.Name())
		if !e.IsDir() || err != nil || compareVersions(v, from) <= 0 {
			continue
		}
		b, err := fs.ReadFile(assets, path.Join(dir, e.Name(), "manifest.json"))
		if err != nil {
			return nil, fmt.Errorf("temporal server: embedded schema %s: %w", e.Name(), err)
		}
		var u schemaUpdate
		if err := json.Unmarshal(b, &u); err != nil {
			return nil, fmt.Errorf("temporal server: manifest of embedded schema %s/%s: %w", dir, e.Name(), err)
		}
		var files []io.Reader
		for _, f := range u.SchemaUpdateCqlFiles {
			b, err := fs.ReadFile(assets, path.Join(dir, e.Name(), f))
			if err != nil {
				return nil, fmt.Errorf("temporal server: embedded schema %s/%s: %w", dir, e.Name(), err)
			}
			files = append(files, bytes.NewReader(b))
		}
		if u.statements, err = persistence.LoadAndSplitQueryFromReaders(files); err != nil {
			return nil, fmt.Errorf("temporal server: embedded schema %s/%s: %w", dir, e.Name(), err)
		}
		u.version = v
		updates = append(updates, u)
	}
	slices.SortFunc(updates, func(a, b schemaUpdate) int { return compareVersions(a.version, b.version) })
	return updates, nil
}

// parseVersion reads a schema version, MAJOR.MINOR with an optional leading v.
func parseVersion(s string) ([2]int, error) {
	major, minor, ok := strings.Cut(strings.TrimPrefix(s, "v"), ".")
	if !ok {
		return [2]int{}, fmt.Errorf("want MAJOR.MINOR, got %q", s)
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(minor)
	if err := errors.Join(err1, err2); err != nil {
		return [2]int{}, err
	}
	return [2]int{a, b}, nil
}

func compareVersions(a, b [2]int) int {
	if a[0] != b[0] {
		return a[0] - b[0]
	}
	return a[1] - b[1]
}

// openPostgres connects to the database, creating it (through the server's postgres database) when it cannot be
// reached: the server's database handle hides the cause, so a missing database looks like any failed connection,
// and the creation's own error then tells which it was.
func openPostgres(cfg *config.SQL, logger log.Logger) (sqlplugin.AdminDB, error) {
	where := describeDB(cfg)
	open := func(cfg *config.SQL) (sqlplugin.AdminDB, error) {
		db, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, cfg, resolver.NewNoopResolver(), logger,
			metrics.NoopMetricsHandler)
		if err != nil {
			return nil, err
		}
		if err := db.Exec("SELECT 1"); err != nil {
			_ = db.Close()
			return nil, err
		}
		return db, nil
	}
	db, openErr := open(cfg)
	if openErr == nil {
		return db, nil
	}
	admin := *cfg
	admin.DatabaseName = "postgres"
	adb, err := open(&admin)
	if err != nil {
		return nil, fmt.Errorf("temporal server: connecting to %s (and to %s to create it): %w", where,
			describeDB(&admin), errors.Join(openErr, err))
	}
	err = adb.CreateDatabase(cfg.DatabaseName)
	_ = adb.Close()
	if err != nil {
		return nil, fmt.Errorf("temporal server: connecting to %s: %w; creating it: %w", where, openErr, err)
	}
	if db, err = open(cfg); err != nil {
		return nil, fmt.Errorf("temporal server: connecting to %s after creating it: %w", where, err)
	}
	return db, nil
}
