-- boxwatch PostgreSQL schema 5: the daemon's hold on the database (one `boxwatch run` per
-- database, as SQLite's `meta` key `daemon`; src/store/daemon-hold.ts). At most one row: the
-- holder's pid and host, when it took the database (ms, the store's clock) and its last heartbeat
-- (ms, the wall clock of its host). A holder whose heartbeat is older than 60 s is taken over.

CREATE TABLE daemon_hold (
  id smallint PRIMARY KEY CHECK (id = 1),
  pid integer NOT NULL,
  host text NOT NULL,
  since bigint NOT NULL,
  beat bigint NOT NULL
);
