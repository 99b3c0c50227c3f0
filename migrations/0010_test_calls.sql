-- boxwatch schema 10: test calls (docs/calls.md, "Test calls"): every attempt of a `test_calls:`
-- entry, one row each. The row of a call is written (state `reserved`) in the same transaction
-- that counted the day's calls against the caps, before make-call is sent, so that a crash, a
-- restart or a second process can never place more calls than the caps allow. The number dialled
-- is not stored here: the call itself is in `calls` (masked unless calls.store_numbers).
-- Times are milliseconds since the Unix epoch, on boxwatch's clock.
CREATE TABLE test_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  entry TEXT NOT NULL,             -- the test_calls entry's name
  serial TEXT NOT NULL,            -- the box it was (to be) placed from
  agent_id INTEGER NOT NULL,
  day INTEGER NOT NULL,            -- UTC day of `at` (floor(at / 86400000)): the caps' day
  at INTEGER NOT NULL,             -- when it was reserved (or skipped)
  state TEXT NOT NULL,             -- reserved (counted, make-call sent or about to be), placed, rejected, skipped (never counted)
  call_id TEXT,                    -- the gateway's call id once placed
  reason TEXT                      -- rejected or skipped: why
);
-- The caps count the rows of an entry and day that are not `skipped`.
CREATE INDEX test_calls_entry_day ON test_calls(entry, day, serial) WHERE state <> 'skipped';
CREATE INDEX test_calls_serial_at ON test_calls(serial, at);
CREATE INDEX test_calls_at ON test_calls(at);
CREATE UNIQUE INDEX test_calls_call ON test_calls(call_id) WHERE call_id IS NOT NULL;
