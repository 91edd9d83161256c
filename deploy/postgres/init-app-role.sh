#!/bin/sh
# Runs once, when the Postgres volume is created: the application's role. It owns no
# table (the migration, as the owner, grants it rows), so row-level security applies to
# it; a superuser or the owner would bypass tenant isolation.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v app_password="$AGENTBUS_APP_DB_PASSWORD" <<'SQL'
CREATE ROLE agentbus_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
  PASSWORD :'app_password';
GRANT CONNECT ON DATABASE agentbus TO agentbus_app;
SQL
