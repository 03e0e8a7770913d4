#!/usr/bin/env python3
"""How the relevance labels of queries.jsonl were made, and a check that they still hold.

Each query below names
  - its `primary` articles: those whose title and focus ("This article explains …") are
    about what the query asks (grade 2), and
  - `answers`: sentences of the seed's text banks that answer it. Every other article whose
    text holds one of them gets grade 1 (it answers the question in passing);
  - or, with `by_answer=True`, no article is about the question as a whole, so every
    article holding an answer sentence gets grade 2.
  - `also`: further grade-1 articles, judged by reading them (a reason is given).
  - or, with kind `off_topic`, nothing: no article of the knowledge base answers it (issue 45:
    the separation of run.py, an off-topic query's best score below every on-topic one's).

The seed composes each article from its topic's sentence bank (functions/core-api/src/db/
seed/corpus.rs, articles.rs), so which sibling articles hold an answer sentence depends on the
seed's shuffle: this script reads the real articles from PostgreSQL and derives the grades,
instead of anyone guessing them.

  labels.py --database-url URL --write benches/relevance/queries.jsonl   (or --articles FILE)
  labels.py --database-url URL --check benches/relevance/queries.jsonl   (exit 1 on drift)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Spec:
    query: str
    kind: str  # paraphrase | misspelling | keyword | question | off_topic
    primary: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    by_answer: bool = False
    also: tuple[str, ...] = ()
    note: str = ""


S = Spec
OFF_TOPIC = "off_topic"
NOT_MADE = "If you see a card payment you did not make"
NOT_LIABLE = "You are not liable for unauthorised card payments"
LOST_STOLEN = "When a card is reported lost or stolen it is blocked permanently"
CNP = "Card-not-present fraud happens when stolen card details"

SPECS: list[Spec] = [
    # --- card fraud: 003 reporting, 010 detection, 017 card-not-present, 024 lost/stolen,
    #     031 phishing/APP scams, 038 fraud review
    S("someone used my card without asking", "paraphrase", ("kb_003",), (NOT_MADE, NOT_LIABLE),
      also=("kb_001", "kb_017"),
      note="kb_001: disputing a payment you do not recognise; kb_017: card details used by others"),
    S("there's a purchase on my statement that I never made", "paraphrase", ("kb_003",),
      (NOT_MADE, NOT_LIABLE), also=("kb_001",),
      note="kb_001: disputing a payment you do not recognise"),
    S("unauthorized charge on my debit card", "misspelling", ("kb_003",), (NOT_MADE, NOT_LIABLE),
      also=("kb_001",), note="US spelling (the corpus says 'unauthorised'); kb_001 as above"),
    S("my wallet got nicked with my bank card inside", "paraphrase", ("kb_024",), (LOST_STOLEN,)),
    S("I misplaced my card", "paraphrase", ("kb_024",), (LOST_STOLEN,)),
    S("lost card", "keyword", ("kb_024",), (LOST_STOLEN,)),
    S("a crook has my card number and is buying stuff on websites", "paraphrase", ("kb_017",),
      (CNP,)),
    S("why was my payment declined as suspicious", "question", ("kb_010",),
      ("A payment that looks unusual may be declined",)),
    S("a caller pretending to be the bank asked me for the code from my text message",
      "paraphrase", ("kb_031",), ("Never share your card's security code",)),
    S("I was tricked into sending money to a fraudster", "paraphrase", ("kb_031",),
      ("Authorised push payment scams",)),
    S("fishing email scam", "misspelling", ("kb_031",), ("Scammers often create urgency",),
      note="'phishing'"),
    S("tiny charges from a shop I have never heard of", "paraphrase", ("kb_010",),
      ("Repeated small test charges",), note="kb_010: the signals fraud monitoring uses"),
    S("how long does a fraud review take", "question", ("kb_038",),
      ("Fraud reviews usually finish within two business days",)),
    S("flag suspicious transaction", "keyword", ("kb_038",),
      ("A transaction flagged for fraud review is checked by an analyst",)),
    S("will I get my money back after card fraud", "question", ("kb_003",),
      (NOT_LIABLE, "Confirmed fraud is refunded in full")),
    S("card freeze", "keyword", ("kb_024",),
      ("freeze the card in the app", "the card stays frozen while the review is open"),
      note="kb_024's focus: freeze, block and replace"),
    S("which of my subscriptions need the details of the new card", "paraphrase", ("kb_024",),
      ("Recurring payments linked to a blocked card must be updated",)),
    # --- disputes: 001 how to, 008 timelines, 015 evidence, 022 duplicate/incorrect amount,
    #     029 not received, 036 withdraw/reopen
    S("how do I contest a payment I disagree with", "paraphrase", ("kb_001",),
      ("A dispute is a formal request to investigate",)),
    S("dispute a transaction", "keyword", ("kb_001",),
      ("You can raise a dispute in the app, through an agent",)),
    S("how long does a dispute take", "question", ("kb_008",),
      ("Most disputes are resolved within 30 days",)),
    S("dispite timline", "misspelling", ("kb_008",), ("Most disputes are resolved within 30 days",)),
    S("what proof should I attach to my claim", "paraphrase", ("kb_015",),
      ("are the most useful evidence",)),
    S("the shop billed me two times for one thing", "paraphrase", ("kb_022",),
      ("You can dispute the full amount or only part of it",)),
    S("double charge", "keyword", ("kb_022",),
      ("You can dispute the full amount or only part of it",)),
    S("I was overcharged at a restaurant", "paraphrase", ("kb_022",),
      ("You can dispute the full amount or only part of it",)),
    S("my parcel never showed up", "paraphrase", ("kb_029",), also=("kb_016",),
      note="kb_016: 'goods not received' is a chargeback reason code"),
    S("paid for a service that was never provided", "question", ("kb_029",)),
    S("I want to call off my dispute", "paraphrase", ("kb_036",)),
    S("reopen a closed case", "keyword", ("kb_036",)),
    S("can I dispute a transaction that is still pending", "question",
      answers=("Pending transactions cannot be disputed until they are booked",), by_answer=True),
    S("the cash machine did not give me the money but my account was debited", "paraphrase",
      answers=("Disputes about cash withdrawals follow the same process",), by_answer=True),
    # --- chargebacks: 002 explained, 009 lifecycle, 016 reason codes, 023 representment,
    #     030 time limits, 037 friendly fraud
    S("difference between a chargeback and a refund", "question", ("kb_002",),
      ("A chargeback is the card scheme process",)),
    S("chargebak", "misspelling", ("kb_002",), ("A chargeback is the card scheme process",)),
    S("what happens once the card network arbitrates", "paraphrase", ("kb_009",),
      ("the card scheme can arbitrate the chargeback",)),
    S("reason codes", "keyword", ("kb_016",), ("Every chargeback carries a reason code",)),
    S("the merchant fought back with proof the charge was valid", "paraphrase", ("kb_023",),
      ("representment",)),
    S("merchant representment", "keyword", ("kb_023",), ("representment",)),
    S("deadline for filing a chargeback", "question", ("kb_030",),
      ("Card schemes generally allow 120 days",)),
    S("how many days do I have to claim my money back through the card company", "paraphrase",
      ("kb_030",), ("Card schemes generally allow 120 days", "Disputes must normally be raised within 120 days")),
    S("customer says they did not buy it but they actually did", "paraphrase", ("kb_037",),
      ("is friendly fraud", "found to be friendly fraud")),
    S("frendly fraud penalty", "misspelling", ("kb_037",), ("found to be friendly fraud",)),
    S("chargeback on a subscription I forgot to cancel", "question",
      answers=("A chargeback on a recurring subscription",), by_answer=True),
    S("can I get a chargeback on a bank transfer", "question",
      answers=("Chargebacks are not available for transfers between bank accounts",),
      by_answer=True),
    # --- sanctions: 004 screening of payments, 011 potential matches, 018 deferred,
    #     025 lists, 032 false positives, 039 new counterparty
    S("why are my payments checked against government blacklists", "paraphrase", ("kb_004",),
      ("Banks must screen customers and payments against sanctions lists",)),
    S("sanctions", "keyword", ("kb_004",),
      ("Banks must screen customers and payments against sanctions lists",)),
    S("name flagged as a possible hit on a watchlist", "paraphrase", ("kb_011",),
      ("A potential match means a name is similar",)),
    S("compliance check result is taking a while", "paraphrase", ("kb_018",),
      ("the screening is deferred and completed automatically later",)),
    S("screning deffered", "misspelling", ("kb_018",),
      ("the screening is deferred and completed automatically later",)),
    S("which lists do you check, OFAC?", "question", ("kb_025",), ("US OFAC SDN list",)),
    S("I share a name with a sanctioned person", "paraphrase", ("kb_032",),
      ("false positives caused by common names",)),
    S("false positive", "keyword", ("kb_032",), ("false positives",)),
    S("vet a supplier before I pay them", "paraphrase", ("kb_039",), also=("kb_004",),
      note="kb_004: every payment is screened"),
    S("why won't the bank tell me why my transfer was stopped", "question", ("kb_004",),
      ("We cannot tell you why a payment was stopped for sanctions reasons",)),
    S("how often are the watch lists updated", "question", ("kb_025",),
      ("Screening lists are refreshed daily",)),
    S("transliteration of names in screening", "keyword",
      answers=("Fuzzy matching catches spelling variants, transliterations",), by_answer=True),
    # --- account limits: 005 daily/monthly, 012 raising, 019 cash withdrawal, 026 exceeded,
    #     033 new accounts, 040 contactless/online
    S("how much can I spend per day with my card", "paraphrase", ("kb_005",),
      ("The default daily card spending limit",)),
    S("spending cap", "keyword", ("kb_005",),
      ("Every account has daily and monthly limits", "The default daily card spending limit")),
    S("I need a bigger allowance on my card for a house purchase", "paraphrase", ("kb_012",),
      ("Raising a limit needs a request", "Requests for higher limits are usually decided")),
    S("max cash from an ATM per day", "paraphrase", ("kb_019",),
      ("Cash withdrawals are limited to 1,000 EUR per day",)),
    S("payment refused because I hit my maximum", "paraphrase", ("kb_026",),
      ("A payment that would exceed a limit is declined",)),
    S("why is my brand new account so restricted", "paraphrase", ("kb_033",),
      ("New accounts start with lower limits",)),
    S("tap to pay maximum", "paraphrase", ("kb_040",),
      ("Contactless payments have a per-tap limit",)),
    S("contactles limit", "misspelling", ("kb_040",), ("Contactless payments have a per-tap limit",)),
    S("when do daily limits reset", "question", ("kb_005",), ("Limits reset at midnight",)),
    S("seperate lmits for buisness card holders", "misspelling", ("kb_005",),
      ("Business accounts can have separate limits",)),
    # --- refunds: 006 how they work, 013 cancelled orders/returns, 020 other currency,
    #     027 missing, 034 pending
    S("how long until the shop's money back shows up", "paraphrase", ("kb_006",),
      ("Refunds usually appear within five business days",)),
    S("I sent an item back, when do I get reimbursed", "paraphrase", ("kb_013",),
      ("Refunds usually appear within five business days", "Partial refunds are common")),
    S("got back less than I originally paid", "paraphrase", ("kb_020",),
      ("a refunded amount can be slightly higher or lower",)),
    S("exchange rate on refund", "keyword", ("kb_020",),
      ("A refund in a foreign currency is converted",)),
    S("the merchant promised to return my money weeks ago and nothing", "paraphrase",
      ("kb_027",), ("If a promised refund has not arrived",)),
    S("refnud missing", "misspelling", ("kb_027",), ("If a promised refund has not arrived",)),
    S("the hotel is still holding money on my card after I checked out", "paraphrase",
      answers=("Hotels and car rental companies often hold a deposit",), by_answer=True,
      also=("kb_034",), note="kb_034: a pending authorisation is released, not refunded"),
    S("cancelled order still showing as pending", "paraphrase", ("kb_034",),
      ("A pending authorisation that the merchant cancels is released",)),
    S("shop refuses to give my money back", "paraphrase", ("kb_027",),
      ("When a merchant refuses a refund it owes you",), also=("kb_001",),
      note="kb_001: how to raise the dispute it points to"),
    # --- fees: 007 overview, 014 foreign transaction, 021 ATM, 028 disputes/chargebacks,
    #     035 getting a fee refunded
    S("monthly price of the premium plan", "paraphrase", ("kb_007",),
      ("premium plans cost between 7 EUR and 15 EUR",)),
    S("fees", "keyword", ("kb_007",), also=("kb_014", "kb_021", "kb_028", "kb_035"),
      note="every fees article; kb_007 is the overview"),
    S("what does it cost to pay in dollars when I am abroad", "paraphrase", ("kb_014",),
      ("foreign transaction fee of 1.5%",)),
    S("forex fee", "keyword", ("kb_014",), ("foreign transaction fee of 1.5%",)),
    S("cost of taking cash out of a machine", "paraphrase", ("kb_021",),
      ("Cash withdrawals are free up to 200 EUR", "ATM operators may add their own fee")),
    S("do I pay anything to open a chargeback", "question", ("kb_028",),
      ("Raising a dispute is free",)),
    S("I was billed a fee by mistake, can I get it back", "paraphrase", ("kb_035",),
      ("If you believe a fee was charged in error",)),
    S("how much is a new card if mine was stolen", "question",
      answers=("Replacement cards are free when the card was stolen",), by_answer=True,
      also=("kb_024",), note="kb_024: replacing a stolen card"),
    S("express delivery fee", "keyword",
      answers=("Express card delivery is available for a fee",), by_answer=True),
    # --- off topic (issue 45): questions a banking support knowledge base does not answer
    *(S(q, OFF_TOPIC) for q in (
        "best recipe for banana bread",
        "how tall is mount everest",
        "who won the football world cup in 2018",
        "weather forecast for tomorrow in Lisbon",
        "how do I reverse a linked list in python",
        "symptoms of the common cold",
        "train times from Berlin to Munich",
        "how to grow tomatoes on a balcony",
        "what is the capital of Australia",
        "translate good morning into Japanese",
        "how many moons does Jupiter have",
        "tips for learning to play the guitar",
        "best hiking trails in the Alps",
        "how long should I boil an egg",
        "movie showtimes near me tonight",
    )),
]


def load_articles(database_url: str) -> list[dict]:
    sql = (
        "SELECT coalesce(json_agg(json_build_object('article_id', article_id, 'title', title, "
        "'body', body, 'topic', topic) ORDER BY article_id), '[]') FROM kb.articles"
    )
    out = subprocess.run(
        ["psql", database_url, "-tA", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def label(spec: Spec, articles: list[dict]) -> dict[str, int]:
    if spec.kind == OFF_TOPIC:
        if spec.primary or spec.answers or spec.also:
            raise SystemExit(f"{spec.query!r}: an off-topic query has no relevant article")
        return {}
    ids = {a["article_id"] for a in articles}
    grades: dict[str, int] = {}
    holders = [
        a["article_id"]
        for a in articles
        if any(s in a["title"] + "\n" + a["body"] for s in spec.answers)
    ]
    for article_id in spec.also:
        grades[article_id] = 1
    for article_id in holders:
        grades[article_id] = 2 if spec.by_answer else 1
    for article_id in spec.primary:
        grades[article_id] = 2
    unknown = set(grades) - ids
    if unknown:
        raise SystemExit(f"{spec.query!r}: unknown articles {sorted(unknown)}")
    for sentence in spec.answers:
        if not any(sentence in a["body"] for a in articles):
            raise SystemExit(f"{spec.query!r}: no article holds {sentence!r}")
    if 2 not in grades.values():
        raise SystemExit(f"{spec.query!r}: no grade-2 article")
    return dict(sorted(grades.items()))


def build(articles: list[dict]) -> list[dict]:
    rows = []
    for n, spec in enumerate(SPECS, start=1):
        row = {
            "id": f"q{n:03d}",
            "query": spec.query,
            "kind": spec.kind,
            "relevant": label(spec, articles),
        }
        if spec.note:
            row["note"] = spec.note
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--database-url", help="the seeded database (read with psql)")
    source.add_argument("--articles", type=Path, help="a JSON array of {article_id, title, body}")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write the labelled queries (JSON lines)")
    group.add_argument("--check", type=Path, help="exit 1 unless the file matches the corpus")
    args = parser.parse_args()
    if args.articles:
        articles = json.loads(args.articles.read_text())
    else:
        articles = load_articles(args.database_url)
    rows = build(articles)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if args.write:
        args.write.write_text(text)
        kinds: dict[str, int] = {}
        for r in rows:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        print(f"{len(rows)} queries written to {args.write}: {kinds}")
        return 0
    if args.check.read_text() != text:
        print(f"{args.check} no longer matches the seeded corpus; rerun with --write", file=sys.stderr)
        return 1
    print(f"{args.check}: {len(rows)} queries match the corpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
