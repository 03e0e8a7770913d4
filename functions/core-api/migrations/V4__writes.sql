-- Writes of SPEC §4/§7 (issue 11): disputes and reviews, idempotency keys scoped by principal
-- and endpoint, and outbox events that consumers can dedupe. Nothing wrote these tables
-- before this migration, so they are reshaped in place.

-- A dispute always carries its amount (core-api fills in the transaction's when absent).
ALTER TABLE core.disputes ALTER COLUMN amount_minor SET NOT NULL;
ALTER TABLE core.disputes
    ADD CONSTRAINT disputes_id_shape CHECK (dispute_id ~ '^dsp_[0-7][0-9A-HJKMNP-TV-Z]{25}$');
-- At most one open dispute per transaction (SPEC §4); the route turns a clash into 409.
CREATE UNIQUE INDEX disputes_one_open_idx ON core.disputes (transaction_id) WHERE status = 'open';

-- A review has no amount (SPEC §4).
ALTER TABLE core.reviews DROP COLUMN amount_minor;
ALTER TABLE core.reviews
    ADD CONSTRAINT reviews_id_shape CHECK (review_id ~ '^rev_[0-7][0-9A-HJKMNP-TV-Z]{25}$');

-- Keys are scoped by caller and endpoint (ARCHITECTURE pitfall 15): one agent's key never
-- replays another's result, and one key on two endpoints names two requests. The claiming
-- transaction inserts the row first (status_code and response NULL) and fills them in before
-- it commits with the write it records, so a committed row always has both.
DROP TABLE ops.idempotency_keys;
CREATE TABLE ops.idempotency_keys (
    principal    text        NOT NULL CHECK (octet_length(principal) BETWEEN 1 AND 255),
    endpoint     text        NOT NULL,
    key          text        NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 255),
    -- SHA-256 (hex) of the canonical JSON body: sorted keys, no insignificant whitespace.
    request_hash text        NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    status_code  integer,
    -- The first response's body exactly as sent (text, not jsonb, which would reorder keys),
    -- so a replay is byte for byte the same.
    response     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- created_at + 24 h; an expired key is reclaimed by the next request that uses it, and
    -- the relay's sweep (or anything else) may delete rows past it.
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (principal, endpoint, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON ops.idempotency_keys (expires_at);

-- Events carry an id consumers dedupe by (delivery is at least once, SPEC §4) and the id of
-- the record they are about.
ALTER TABLE ops.outbox ADD COLUMN event_id text NOT NULL UNIQUE
    CHECK (event_id ~ '^[0-7][0-9A-HJKMNP-TV-Z]{25}$');
ALTER TABLE ops.outbox ADD COLUMN aggregate_id text NOT NULL;
COMMENT ON COLUMN ops.outbox.aggregate IS 'kind of record: dispute, review';
COMMENT ON COLUMN ops.outbox.created_at IS 'occurred_at of the event (the write''s commit transaction time)';
