-- Operational tables: the transactional outbox (drained by outbox-relay into SQS) and the
-- idempotency keys of core-api's write endpoints (SPEC §7, kept 24 h).
CREATE TABLE ops.outbox (
    id           bigserial   PRIMARY KEY,
    aggregate    text        NOT NULL,
    event_type   text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
-- The relay reads unpublished rows in id order.
CREATE INDEX outbox_unpublished_idx ON ops.outbox (id) WHERE published_at IS NULL;

CREATE TABLE ops.idempotency_keys (
    key          text        NOT NULL,
    principal    text        NOT NULL,
    request_hash text        NOT NULL,
    -- NULL while the first request holding the key is still in flight.
    response     jsonb,
    status_code  integer,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    -- Keys are scoped per caller: two principals may use the same key.
    PRIMARY KEY (principal, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON ops.idempotency_keys (expires_at);
