-- Article passages and their embeddings for hybrid search (issue 13; docs/embeddings.md).
-- V10 rather than V5: other branches add migrations in between, and refinery applies them in
-- version order on a fresh database.
--
-- One passage per paragraph, prefixed with the article's title; `content` is exactly what was
-- embedded, `content_sha` = sha256(content) so an edited article is re-embedded, and `model` /
-- `dimensions` say what made the vector (rows of another model are re-embedded by
-- `core-api embed` and ignored by search until then).
CREATE TABLE kb.passages (
    article_id  text        NOT NULL REFERENCES kb.articles ON DELETE CASCADE,
    ordinal     int         NOT NULL CHECK (ordinal >= 0),
    content     text        NOT NULL,
    content_sha bytea       NOT NULL CHECK (length(content_sha) = 32),
    model       text        NOT NULL CHECK (model <> ''),
    dimensions  int         NOT NULL CHECK (dimensions > 0),
    embedding   real[]      NOT NULL CHECK (array_ndims(embedding) = 1
                                            AND array_length(embedding, 1) = dimensions),
    embedded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (article_id, ordinal)
);

-- Bumped by every `core-api embed` that changed a passage, and read in the same transaction
-- as each search's full-text query: a warm core-api reloads its cached vectors when it moves.
CREATE TABLE kb.embedding_state (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   bigint  NOT NULL DEFAULT 0
);
INSERT INTO kb.embedding_state DEFAULT VALUES;
