// Package dotenv reads .env files: KEY=value lines, with comments, quoted values and an optional "export" prefix,
// as shells and docker compose write them.
package dotenv
