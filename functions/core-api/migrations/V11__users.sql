-- The person behind a write (SPEC §5 "The user", issue 44). One app client serves many users,
-- so the client alone attributed every user's write to the application and let two users'
-- identical calls replay each other's results.
--
-- Disputes and reviews: `created_by` is the user from now on (`X-Kosha-User`, the token's
-- `sub`; a machine client's user is its client) and `client_id` the app client
-- (`X-Kosha-Principal`). Rows written before this migration held the client in `created_by`,
-- which is also their user under the rule for a request without `X-Kosha-User`.
ALTER TABLE core.disputes ADD COLUMN client_id text;
UPDATE core.disputes SET client_id = created_by;
ALTER TABLE core.disputes ALTER COLUMN client_id SET NOT NULL;
COMMENT ON COLUMN core.disputes.created_by IS 'the user who raised it (X-Kosha-User, SPEC §5)';
COMMENT ON COLUMN core.disputes.client_id IS 'the app client it came through (X-Kosha-Principal)';

ALTER TABLE core.reviews ADD COLUMN client_id text;
UPDATE core.reviews SET client_id = created_by;
ALTER TABLE core.reviews ALTER COLUMN client_id SET NOT NULL;
COMMENT ON COLUMN core.reviews.created_by IS 'the user who requested it (X-Kosha-User, SPEC §5)';
COMMENT ON COLUMN core.reviews.client_id IS 'the app client it came through (X-Kosha-Principal)';

-- Idempotency keys are scoped by client and user (SPEC §4): a key stored before this migration
-- belongs to its client as a user, as a request without `X-Kosha-User` does.
ALTER TABLE ops.idempotency_keys ADD COLUMN user_id text;
UPDATE ops.idempotency_keys SET user_id = principal;
ALTER TABLE ops.idempotency_keys ALTER COLUMN user_id SET NOT NULL;
ALTER TABLE ops.idempotency_keys
    ADD CONSTRAINT idempotency_keys_user_id_length CHECK (octet_length(user_id) BETWEEN 1 AND 255);
ALTER TABLE ops.idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE ops.idempotency_keys ADD PRIMARY KEY (principal, user_id, endpoint, key);
