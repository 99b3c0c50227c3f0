-- boxwatch schema 8: stable views for direct readers (`boxwatch sql`, Grafana's SQLite data
-- source, notebooks). The tables underneath may change between versions; these views keep their
-- names, columns and meaning (docs/storage.md). Times are milliseconds since the Unix epoch.

CREATE VIEW v_boxes AS
SELECT serial, name, gateway_id, connected, battery, signal, firmware, location, ip,
       last_seen, registered_at, details_at, first_seen, last_polled, missing_since
FROM boxes;

CREATE VIEW v_cycles AS
SELECT started_at, duration_ms, requests, outcome, error_code, error, boxes, details_fetched
FROM cycles;

-- One row per box and closed hour. Means are time-weighted; connected_fraction is connected time
-- over observed time.
CREATE VIEW v_rollups AS
SELECT b.serial AS serial,
       r.hour * 3600000 AS hour_start,
       r.polls AS polls,
       r.observed_ms AS observed_ms,
       CASE WHEN r.observed_ms > 0 THEN 1.0 - CAST(r.disconnected_ms AS REAL) / r.observed_ms END AS connected_fraction,
       r.battery_min AS battery_min,
       r.battery_max AS battery_max,
       r.battery_mean_milli / 1000.0 AS battery_mean,
       r.signal_min AS signal_min,
       r.signal_max AS signal_max,
       r.signal_mean_milli / 1000.0 AS signal_mean
FROM rollups r JOIN boxes b ON b.id = r.box_id;

-- Every alert state change; value and threshold are JSON text.
CREATE VIEW v_alert_transitions AS
SELECT id, at, key, rule, serial, severity, from_status, to_status, value, threshold, summary, held_back, held_by
FROM alert_transitions;

-- Every notification message and its delivery: status is pending, delivered or dead.
CREATE VIEW v_notifications AS
SELECT id, notifier, created_at, status, attempts, next_attempt_at, done_at, last_error, message
FROM outbox;
