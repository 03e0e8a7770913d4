//! Knowledge-base articles of the seed (SPEC §4): `kb_001`…`kb_040`, cycling through the seven
//! topics of [`super::corpus::TOPICS`]. Each article has 3–5 paragraphs of 3 sentences drawn
//! without repeats from its topic's bank, after a one-line introduction, and ends with a
//! shared closing sentence.

use super::corpus::{CLOSINGS, TOPICS, Topic};
use kosha_splitmix::SplitMix64;

/// Number of seeded articles.
pub const ARTICLES: usize = 40;
const SENTENCES_PER_PARAGRAPH: usize = 3;

/// A seeded knowledge-base article.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// `kb_001`…
    pub article_id: String,
    /// Title (ranked with weight A).
    pub title: String,
    /// Paragraphs separated by blank lines (ranked with weight B).
    pub body: String,
    /// Topic key, e.g. `chargebacks`.
    pub topic: &'static str,
}

/// The seeded articles, in id order.
pub fn articles(rng: &mut SplitMix64) -> Vec<Article> {
    (0..ARTICLES)
        .filter_map(|index| {
            let topic = TOPICS.get(index % TOPICS.len())?;
            Some(article(rng, index, topic))
        })
        .collect()
}

fn article(rng: &mut SplitMix64, index: usize, topic: &'static Topic) -> Article {
    let round = index / TOPICS.len();
    let (title, focus) = topic
        .titles
        .get(round % topic.titles.len().max(1))
        .copied()
        .unwrap_or(("Help centre", "a common banking question"));
    let mut bank: Vec<&str> = topic.sentences.to_vec();
    rng.shuffle(&mut bank);
    let wanted = usize::try_from(rng.between(3, 5)).unwrap_or(3);
    let mut paragraphs: Vec<String> = bank
        .chunks(SENTENCES_PER_PARAGRAPH)
        .take(wanted)
        .map(|chunk| chunk.join(" "))
        .collect();
    if let Some(first) = paragraphs.first_mut() {
        *first = format!("This article explains {focus}. {first}");
    }
    if let (Some(last), Some(closing)) = (paragraphs.last_mut(), rng.pick(CLOSINGS)) {
        last.push(' ');
        last.push_str(closing);
    }
    Article {
        article_id: format!("kb_{:03}", index + 1),
        title: title.to_owned(),
        body: paragraphs.join("\n\n"),
        topic: topic.key,
    }
}
