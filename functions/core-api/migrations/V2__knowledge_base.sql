-- Knowledge base for search_knowledge_base (SPEC §4). Full-text ranking: title weighs A,
-- body weighs B; the generated column keeps the vector in step with the text.
CREATE TABLE kb.articles (
    article_id text     PRIMARY KEY CHECK (article_id ~ '^kb_[0-9]{3,}$'),
    title      text     NOT NULL,
    body       text     NOT NULL,
    topic      text     NOT NULL,
    search     tsvector GENERATED ALWAYS AS (
                   setweight(to_tsvector('english', title), 'A')
                   || setweight(to_tsvector('english', body), 'B')
               ) STORED
);

CREATE INDEX articles_search_idx ON kb.articles USING gin (search);
