-- boxwatch PostgreSQL schema 8: box and string ids given by the database (sequences), so that
-- several processes can write one database (replicas, each leading its own accounts); a cycle is
-- keyed by its account and start (two accounts' cycles may start at the same millisecond).
CREATE SEQUENCE boxes_id_seq AS bigint OWNED BY boxes.id;
SELECT setval('boxes_id_seq', coalesce((SELECT max(id) FROM boxes), 0) + 1, false);
ALTER TABLE boxes ALTER COLUMN id SET DEFAULT nextval('boxes_id_seq');
CREATE SEQUENCE strings_id_seq AS integer OWNED BY strings.id;
SELECT setval('strings_id_seq', coalesce((SELECT max(id) FROM strings), 0) + 1, false);
ALTER TABLE strings ALTER COLUMN id SET DEFAULT nextval('strings_id_seq');
ALTER TABLE cycles DROP CONSTRAINT cycles_pkey;
ALTER TABLE cycles ADD PRIMARY KEY (account, started_at);
