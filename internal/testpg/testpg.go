// Package testpg finds the PostgreSQL server tests run against (127.0.0.1:5432,
// database test, trust auth; CATALOGBOT_TEST_DATABASE_URL overrides) and
// gives each test a schema of its own. Only tests import it.
package testpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLs are the database URLs tried, in order.
func URLs() []string {
	if u := os.Getenv("CATALOGBOT_TEST_DATABASE_URL"); u != "" {
		return []string{u}
	}
	return []string{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"postgres://root@127.0.0.1:5432/test?sslmode=disable",
	}
}

// URL returns a reachable test database URL, or skips the test.
func URL(t testing.TB) string {
	t.Helper()
	var last error
	for _, u := range URLs() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		conn, err := pgx.Connect(ctx, u)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return u
		}
		last = err
	}
	t.Skipf("PostgreSQL not reachable on 127.0.0.1:5432 (database test, trust auth, user postgres or root): %v", last)
	return ""
}

// FreshSchema names a schema (prefix + random) for one test and drops it when
// the test ends; whoever uses it creates it.
func FreshSchema(t testing.TB, dbURL, prefix string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	return schema
}
