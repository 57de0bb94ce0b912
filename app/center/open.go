package center

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// OpenStore opens the configured store. For PostgreSQL it also returns the
// pool it made (closed by the caller after the store; the MySQL store closes
// its own); with
// store.auto_migrate it applies migrations first, otherwise it checks that
// the schema is current.
func OpenStore(ctx context.Context, cfg config.Store, now func() time.Time, log *slog.Logger) (store.Store, *pgxpool.Pool, error) {
	switch cfg.Driver {
	case "sqlite":
		st, err := sqlite.Open(ctx, cfg.DSN, sqlite.Options{Now: now, Logger: log.With("component", "store"), CheckOnly: !cfg.AutoMigrate})
		if errors.Is(err, store.ErrNotMigrated) {
			return nil, nil, fmt.Errorf("store: %w (run \"eventcenter migrate\" or set store.auto_migrate)", err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("store: %w", err)
		}
		return st, nil, nil
	case "postgres":
		pool, err := NewPool(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		if cfg.AutoMigrate {
			if err := postgres.Migrate(ctx, pool); err != nil {
				pool.Close()
				return nil, nil, fmt.Errorf("store: migrate: %w", err)
			}
		}
		if err := postgres.CheckSchema(ctx, pool); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("store: %w (run \"eventcenter migrate\" or set store.auto_migrate)", err)
		}
		st, err := postgres.New(pool, postgres.Options{Now: now, Logger: log.With("component", "store")})
		if err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("store: %w", err)
		}
		return st, pool, nil
	case "mysql":
		st, err := openMySQL(ctx, cfg, now, log)
		if err != nil {
			return nil, nil, err
		}
		return st, nil, nil
	case "sharded":
		st, err := openSharded(ctx, cfg, now, log)
		if err != nil {
			return nil, nil, err
		}
		return st, nil, nil
	}
	return nil, nil, fmt.Errorf("store.driver: unknown driver %q", cfg.Driver)
}

// shardStore is the configuration of shard i of a sharded store: a
// PostgreSQL store with the shard's DSN and the common settings.
func shardStore(cfg config.Store, i int) config.Store {
	sc := cfg
	sc.Driver, sc.DSN, sc.Shards = "postgres", cfg.Shards[i].DSN, nil
	return sc
}

// openSharded opens one PostgreSQL store per store.shards entry (each with
// its own pool of store.max_conns, migrated or checked like a single
// store) and the sharded store over them, which closes them.
func openSharded(ctx context.Context, cfg config.Store, now func() time.Time, log *slog.Logger) (store.Store, error) {
	var shards []sharded.Shard
	closeAll := func() {
		for _, sh := range shards {
			_ = sh.Store.Close()
			sh.Close()
		}
	}
	for i, sc := range cfg.Shards {
		st, pool, err := OpenStore(ctx, shardStore(cfg, i), now, log.With("shard", i))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("store.shards[%d]: %w", i, err)
		}
		shards = append(shards, sharded.Shard{Store: st, Buckets: sc.Buckets, Close: pool.Close})
	}
	st, err := sharded.New(shards)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("store.shards: %w", err)
	}
	return st, nil
}

// openMySQL opens the MySQL / MariaDB store, which owns (and closes) its
// connection pool of store.max_conns connections. It checks the server
// version, migrates with store.auto_migrate, and checks the schema.
func openMySQL(ctx context.Context, cfg config.Store, now func() time.Time, log *slog.Logger) (store.Store, error) {
	db, err := NewMySQLDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.AutoMigrate {
		if err := mysql.Migrate(ctx, db); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: migrate: %w", err)
		}
	}
	if err := mysql.CheckSchema(ctx, db); err != nil {
		_ = db.Close()
		if errors.Is(err, store.ErrNotMigrated) {
			return nil, fmt.Errorf("store: %w (run \"eventcenter migrate\" or set store.auto_migrate)", err)
		}
		return nil, fmt.Errorf("store: %w", err)
	}
	st, err := mysql.New(db, mysql.Options{Now: now, Logger: log.With("component", "store"), CloseDB: true})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	return st, nil
}

// NewMySQLDB connects to MySQL / MariaDB with store.max_conns connections.
func NewMySQLDB(ctx context.Context, cfg config.Store) (*sql.DB, error) {
	db, err := mysql.OpenDB(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("store.dsn: %w", err)
	}
	db.SetMaxOpenConns(cfg.MaxConns)
	db.SetMaxIdleConns(cfg.MaxConns)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect to mysql: %w", err)
	}
	return db, nil
}

// NewPool connects to PostgreSQL with store.max_conns connections.
func NewPool(ctx context.Context, cfg config.Store) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("store.dsn: %w", err)
	}
	pcfg.MaxConns = int32(cfg.MaxConns)
	if err := storePassword(pcfg, cfg); err != nil {
		return nil, err
	}
	postgres.ConfigurePool(pcfg)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return pool, nil
}

// Migrate applies the configured store's migrations.
func Migrate(ctx context.Context, cfg config.Store, log *slog.Logger) error {
	switch cfg.Driver {
	case "sqlite":
		st, err := sqlite.Open(ctx, cfg.DSN, sqlite.Options{Logger: log})
		if err != nil {
			return err
		}
		return st.Close()
	case "postgres":
		pool, err := NewPool(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		return postgres.Migrate(ctx, pool)
	case "mysql":
		db, err := NewMySQLDB(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		return mysql.Migrate(ctx, db)
	case "sharded":
		for i := range cfg.Shards {
			if err := Migrate(ctx, shardStore(cfg, i), log.With("shard", i)); err != nil {
				return fmt.Errorf("store.shards[%d]: %w", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("store.driver: unknown driver %q", cfg.Driver)
}

func newTarget(t config.Target, cfg config.Config, opt Options) (forwarder.Target, error) {
	log := opt.Logger.With("component", "target", "target", t.Name)
	switch t.Type {
	case "kafka":
		brokers := t.Brokers
		if len(brokers) == 0 {
			brokers = cfg.Kafka.Brokers
		}
		auth, err := cfg.TargetAuth(t).Options()
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		kopts := append(append([]kgo.Opt{kgo.ClientID(cfg.Kafka.ClientID + "-" + t.Name)}, auth...), opt.KafkaOptions...)
		return kafka.New(kafka.Config{Name: t.Name, Brokers: brokers, AutoCreateTopics: t.AutoCreateTopics,
			MaxMessageBytes: cfg.MessageBytes(t), Compression: t.Compression, ClientOptions: kopts, Logger: log})
	case "rocketmq":
		group := t.Group
		if group == "" {
			group = "eventcenter"
		}
		return rocketmq.New(rocketmq.Config{Name: t.Name, NameServers: t.NameServers, Group: group,
			MaxMessageBytes: cfg.MessageBytes(t), AccessKey: t.ACL.AccessKey, SecretKey: t.ACL.SecretKey, Logger: log})
	}
	return nil, fmt.Errorf("unknown target type %q", t.Type)
}

// targetTopicCheck is ingest's check of a PREPARE's forward topic: the
// rule of the target it names (or the default target), the same function
// that target applies when it sends. An unknown target passes: the
// forwarder reports it.
func targetTopicCheck(f config.Forward) func(target, topic string) error {
	rules := map[string]func(string) error{}
	for _, t := range f.Targets {
		switch t.Type {
		case "kafka":
			rules[t.Name] = kafka.CheckTopic
		case "rocketmq":
			rules[t.Name] = rocketmq.CheckTopic
		}
	}
	return func(target, topic string) error {
		if target == "" {
			target = f.DefaultTarget
		}
		if check := rules[target]; check != nil {
			return check(topic)
		}
		return nil
	}
}
