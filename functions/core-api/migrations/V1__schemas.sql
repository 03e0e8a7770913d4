-- Core banking data (SPEC §4): accounts, transactions, and the write-side records that the
-- agent tools raise_dispute and flag_transaction_for_review create.
CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS kb;
CREATE SCHEMA IF NOT EXISTS ops;

CREATE TABLE core.accounts (
    account_id   text        PRIMARY KEY CHECK (account_id ~ '^acc_[0-9]{4}$'),
    display_name text        NOT NULL,
    currency     text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status       text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'frozen', 'closed')),
    opened_at    timestamptz NOT NULL
);

CREATE TABLE core.transactions (
    transaction_id text        PRIMARY KEY CHECK (transaction_id ~ '^txn_[0-9]{6}$'),
    account_id     text        NOT NULL REFERENCES core.accounts (account_id),
    -- Minor units (cents); positive is money charged to the account.
    amount_minor   bigint      NOT NULL,
    currency       text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    merchant       text        NOT NULL,
    category       text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('booked', 'pending', 'reversed')),
    booked_at      timestamptz NOT NULL
);

-- Keyset pagination of GET /v1/accounts/{id}/transactions: newest first, id as tie-breaker.
CREATE INDEX transactions_account_page_idx
    ON core.transactions (account_id, booked_at DESC, transaction_id DESC);

CREATE TABLE core.disputes (
    dispute_id     text        PRIMARY KEY,
    transaction_id text        NOT NULL REFERENCES core.transactions (transaction_id),
    reason         text        NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 1000),
    amount_minor   bigint      CHECK (amount_minor > 0),
    status         text        NOT NULL DEFAULT 'open'
                               CHECK (status IN ('open', 'won', 'lost', 'withdrawn')),
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX disputes_transaction_idx ON core.disputes (transaction_id);

CREATE TABLE core.reviews (
    review_id      text        PRIMARY KEY,
    transaction_id text        NOT NULL REFERENCES core.transactions (transaction_id),
    reason         text        NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 1000),
    amount_minor   bigint      CHECK (amount_minor > 0),
    status         text        NOT NULL DEFAULT 'pending_review'
                               CHECK (status IN ('pending_review', 'cleared', 'escalated')),
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reviews_transaction_idx ON core.reviews (transaction_id);
