-- boxwatch PostgreSQL schema 17: a cycle reads only its account's boxes (and the fleet snapshot
-- refreshes one account's part at a time): an index per account, in the order the fleet is read.
CREATE INDEX boxes_account ON boxes (account, serial COLLATE "C");
