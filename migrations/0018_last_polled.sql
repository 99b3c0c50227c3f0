-- boxwatch schema 18: a box's last poll while its segment is open is its account's latest cycle.
--
-- A poll cycle no longer rewrites the row of every box it lists only to move `last_polled`: a box
-- whose segment is open (`seg_start` set) was listed by its account's latest cycle, so that
-- cycle's start is its last poll; `boxes.last_polled` is exact for a box whose segment is closed
-- (written when the segment ends) and may be older for one whose segment is open. Rows written
-- before this version hold their exact last poll, which is the same value: nothing to convert.
-- The stable view keeps its columns and meaning (the same expression as src/store/sqlite/rows.ts,
-- LAST_POLLED).
DROP VIEW v_boxes;
CREATE VIEW v_boxes AS
SELECT serial, name, gateway_id, connected, battery, signal, firmware, location, ip,
       last_seen, registered_at, details_at, first_seen,
       CASE WHEN seg_start IS NULL THEN last_polled
         ELSE coalesce((SELECT max(c.started_at) FROM cycles c WHERE c.account = boxes.account), last_polled) END AS last_polled,
       missing_since, account
FROM boxes;
