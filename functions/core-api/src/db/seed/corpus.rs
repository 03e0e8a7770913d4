//! Text banks of the knowledge-base seed: per topic, article titles with their focus and
//! sentences that read like a bank's help-centre and policy pages. [`super::articles`] composes
//! them deterministically, so each article is varied yet full of the topic's own vocabulary.

/// One topic of the knowledge base.
#[derive(Debug)]
pub struct Topic {
    /// Stable topic key stored in `kb.articles.topic`.
    pub key: &'static str,
    /// (title, focus) pairs; the focus completes "This article explains …".
    pub titles: &'static [(&'static str, &'static str)],
    /// Sentences about the topic; an article uses a shuffled subset without repeats.
    pub sentences: &'static [&'static str],
}

/// Closing sentences shared by every topic.
pub const CLOSINGS: &[&str] = &[
    "If anything in this article is unclear, contact support through the secure message centre and quote the transaction id.",
    "Our support team is available around the clock and can check the status of any open case for you.",
    "Keep the references we send you: they let any agent find your case quickly.",
    "These rules follow the card scheme regulations and the terms and conditions of your account.",
    "We review this guidance regularly; the version published in the help centre always applies.",
    "Agents acting on behalf of a customer must record the customer's consent before making changes.",
];

/// The seven topics of SPEC §4, in the order articles cycle through them. Topics with five
/// titles come last: with 40 articles only the first five topics get a sixth article.
pub const TOPICS: &[Topic] = &[
    Topic {
        key: "disputes",
        titles: &[
            (
                "How to dispute a card transaction",
                "how to raise a dispute about a card payment you do not recognise or disagree with",
            ),
            (
                "Dispute timelines and what to expect",
                "how long a dispute takes and what happens at each stage",
            ),
            (
                "Evidence to include when you raise a dispute",
                "which documents make a dispute succeed and how to send them",
            ),
            (
                "Disputing a duplicate or incorrect amount",
                "what to do when a merchant charged you twice or charged the wrong amount",
            ),
            (
                "Disputes for goods or services not received",
                "how to dispute a purchase that never arrived or a service that was not provided",
            ),
            (
                "Withdrawing or reopening a dispute",
                "how to withdraw a dispute you no longer need and when a closed dispute can be reopened",
            ),
        ],
        sentences: &[
            "A dispute is a formal request to investigate a card transaction that you believe is wrong.",
            "You can raise a dispute in the app, through an agent, or by calling support, and each dispute gets a reference number.",
            "Before raising a dispute, try to resolve the problem with the merchant, because many issues are settled faster that way.",
            "Disputes must normally be raised within 120 days of the transaction's booking date.",
            "While a dispute is open, we may give you a temporary credit for the disputed amount.",
            "If the investigation finds in the merchant's favour, any temporary credit is reversed and we explain why.",
            "You can dispute the full amount or only part of it, for example when you were overcharged.",
            "Pending transactions cannot be disputed until they are booked, because the final amount may still change.",
            "A reversed transaction does not need a dispute: the money has already been returned to your account.",
            "Receipts, order confirmations, delivery tracking and your messages with the merchant are the most useful evidence.",
            "Most disputes are resolved within 30 days, but complex cases involving the card scheme can take up to 90 days.",
            "We will contact you if we need more information, and the dispute pauses until you reply.",
            "Raising the same dispute twice does not speed it up; the second request is linked to the first one.",
            "Disputes about cash withdrawals follow the same process, with the ATM operator's records as evidence.",
            "If the dispute concerns fraud rather than a disagreement with the merchant, we also block the card to protect you.",
        ],
    },
    Topic {
        key: "chargebacks",
        titles: &[
            (
                "Chargebacks explained",
                "what a chargeback is and how it differs from a refund or a dispute",
            ),
            (
                "The chargeback lifecycle",
                "each step of a chargeback from the first claim to the final arbitration",
            ),
            (
                "Chargeback reason codes",
                "how chargeback reason codes are chosen and why they matter",
            ),
            (
                "Merchant representment of a chargeback",
                "how a merchant can contest a chargeback and what happens next",
            ),
            (
                "Chargeback time limits",
                "the deadlines the card schemes set for filing and answering a chargeback",
            ),
            (
                "Chargebacks and friendly fraud",
                "how chargebacks are assessed when the cardholder made the purchase after all",
            ),
        ],
        sentences: &[
            "A chargeback is the card scheme process that returns money from the merchant's bank to the cardholder's bank.",
            "We file a chargeback on your behalf when a dispute cannot be resolved directly with the merchant.",
            "Every chargeback carries a reason code, such as fraud, goods not received, or not as described.",
            "The reason code decides which evidence the merchant must supply to contest the chargeback.",
            "Card schemes generally allow 120 days from the transaction date to file a chargeback.",
            "The merchant may answer a chargeback with representment, sending evidence that the charge was valid.",
            "If the merchant's representment is convincing, the chargeback is reversed and the funds return to the merchant.",
            "A second chargeback, sometimes called pre-arbitration, is possible when new evidence contradicts the merchant.",
            "When both sides still disagree, the card scheme can arbitrate the chargeback, and its decision is final.",
            "Chargebacks are not available for transfers between bank accounts, only for card payments.",
            "Filing a chargeback for a purchase you made and received is friendly fraud and can lead to the account being closed.",
            "A chargeback on a recurring subscription stops the disputed payment, but you should also cancel the subscription with the merchant.",
            "Chargeback outcomes are shown on the dispute case, together with the amount credited back.",
            "Merchants with many chargebacks pay higher fees and may lose the ability to accept cards.",
            "We track every chargeback against the original transaction id, so one transaction has at most one active chargeback.",
        ],
    },
    Topic {
        key: "card_fraud",
        titles: &[
            (
                "Reporting card fraud",
                "what to do straight away when you see a card payment you did not make",
            ),
            (
                "How we detect card fraud",
                "the signals our fraud monitoring uses and why a payment may be declined",
            ),
            (
                "Card-not-present fraud",
                "how online and phone payment fraud works and how to protect your card details",
            ),
            (
                "Lost or stolen cards",
                "how to freeze, block and replace a lost or stolen card",
            ),
            (
                "Phishing, scams and authorised push payment fraud",
                "how to recognise scams that trick you into approving a payment",
            ),
            (
                "Flagging a transaction for fraud review",
                "how a suspicious transaction is flagged for review and what the review checks",
            ),
        ],
        sentences: &[
            "If you see a card payment you did not make, freeze the card in the app immediately and report it as fraud.",
            "You are not liable for unauthorised card payments reported promptly, unless you acted with gross negligence.",
            "Our fraud monitoring scores every card authorisation in real time using the merchant, amount, location and device.",
            "A payment that looks unusual may be declined or held until you confirm it in the app.",
            "Card-not-present fraud happens when stolen card details are used online or over the phone.",
            "Never share your card's security code, PIN or one-time passcodes, not even with someone claiming to be from the bank.",
            "When a card is reported lost or stolen it is blocked permanently and a replacement with a new number is sent.",
            "Recurring payments linked to a blocked card must be updated with the new card details.",
            "A transaction flagged for fraud review is checked by an analyst, who may contact you to confirm it.",
            "Fraud reviews usually finish within two business days; the card stays frozen while the review is open.",
            "Confirmed fraud is refunded in full, and any fees or interest caused by it are reversed.",
            "Scammers often create urgency, for example claiming your account will be closed unless you pay at once.",
            "Authorised push payment scams, where you are tricked into sending money yourself, are assessed case by case.",
            "Enable transaction notifications so you see every card payment as soon as it happens.",
            "Repeated small test charges from an unknown merchant are a common sign that card details were stolen.",
        ],
    },
    Topic {
        key: "sanctions_screening",
        titles: &[
            (
                "Sanctions screening of payments",
                "why every payment and customer is screened against sanctions lists",
            ),
            (
                "Potential sanctions matches",
                "what happens when a name is a potential match on a sanctions list",
            ),
            (
                "Deferred screening results",
                "why a screening result can be deferred and how it is completed later",
            ),
            (
                "Sanctions lists we screen against",
                "which sanctions and watch lists apply and how often they are updated",
            ),
            (
                "False positives in sanctions screening",
                "how false positive sanctions matches are cleared and how to avoid delays",
            ),
            (
                "Screening a new counterparty",
                "how a person or company is screened before you send them money",
            ),
        ],
        sentences: &[
            "Banks must screen customers and payments against sanctions lists to comply with financial sanctions law.",
            "Sanctions screening compares names, dates of birth and countries with entries on official watch lists.",
            "We screen against the EU consolidated list, the UN Security Council list, the UK sanctions list and the US OFAC SDN list.",
            "A potential match means a name is similar to a listed entry; it does not mean the person is sanctioned.",
            "Potential matches are reviewed by a compliance analyst, who compares the full details of both records.",
            "Most potential matches turn out to be false positives caused by common names.",
            "Providing a date of birth and a country greatly reduces false positives in sanctions screening.",
            "A payment held for sanctions screening is released as soon as the match is cleared.",
            "If the screening service is temporarily unavailable, the screening is deferred and completed automatically later.",
            "A deferred screening keeps its screening id, so you can check the result at any time.",
            "Screening lists are refreshed daily, and existing customers are rescreened whenever the lists change.",
            "We cannot tell you why a payment was stopped for sanctions reasons, because the law restricts what we may disclose.",
            "Confirmed sanctions matches are frozen and reported to the competent authority as the law requires.",
            "Fuzzy matching catches spelling variants, transliterations and swapped first and last names.",
            "Screening results are kept for at least five years as part of our compliance records.",
        ],
    },
    Topic {
        key: "account_limits",
        titles: &[
            (
                "Daily and monthly account limits",
                "the default spending, withdrawal and transfer limits on your account",
            ),
            (
                "Raising your card limits",
                "how to ask for a higher card or transfer limit and how we decide",
            ),
            (
                "Cash withdrawal limits",
                "how much cash you can withdraw per day and per month",
            ),
            (
                "Why a payment exceeded your limit",
                "what happens when a payment would exceed a limit and how to complete it",
            ),
            (
                "Limits for new accounts",
                "why new accounts start with lower limits and when they increase",
            ),
            (
                "Contactless and online payment limits",
                "the limits on contactless taps and on online card payments",
            ),
        ],
        sentences: &[
            "Every account has daily and monthly limits for card spending, cash withdrawals and outgoing transfers.",
            "The default daily card spending limit is 5,000 EUR or the equivalent in your account currency.",
            "Cash withdrawals are limited to 1,000 EUR per day and 5,000 EUR per month by default.",
            "Limits protect you: they cap the damage if your card or login details are stolen.",
            "You can lower any limit yourself in the app, and the change applies immediately.",
            "Raising a limit needs a request, and we may ask about the purpose of the larger payments.",
            "Requests for higher limits are usually decided within one business day.",
            "New accounts start with lower limits for the first 30 days while we verify your activity.",
            "A payment that would exceed a limit is declined, and the app shows which limit was reached.",
            "Contactless payments have a per-tap limit, after which you must insert the card and enter your PIN.",
            "Online card payments above the strong customer authentication threshold must be approved in the app.",
            "Limits reset at midnight in your account's time zone for daily limits and on the first of the month for monthly limits.",
            "Pending transactions count towards your limits until they are booked or released.",
            "Business accounts can have separate limits for each card holder.",
            "A temporary limit increase expires automatically on the date you choose.",
        ],
    },
    Topic {
        key: "refunds",
        titles: &[
            (
                "How merchant refunds work",
                "how a refund from a merchant reaches your account and how long it takes",
            ),
            (
                "Refunds for cancelled orders and returns",
                "what happens to your money when you cancel an order or return goods",
            ),
            (
                "Refunds in a different currency",
                "why a refunded amount can differ from the original payment after currency conversion",
            ),
            (
                "Missing refunds",
                "what to do when a merchant promised a refund that has not arrived",
            ),
            (
                "Refunds of pending transactions",
                "how a pending authorisation is released instead of refunded",
            ),
        ],
        sentences: &[
            "A refund is initiated by the merchant and returns all or part of a card payment to your account.",
            "Refunds usually appear within five business days, although some merchants take up to ten.",
            "The refund is credited to the card that was used for the original purchase.",
            "If the card has been replaced, the refund is still routed to your account automatically.",
            "A refund in a foreign currency is converted at the exchange rate on the day the refund is processed.",
            "Because exchange rates move, a refunded amount can be slightly higher or lower than the original payment.",
            "A pending authorisation that the merchant cancels is released rather than refunded, and simply disappears.",
            "Hotels and car rental companies often hold a deposit, which is released a few days after check-out.",
            "If a promised refund has not arrived after ten business days, ask the merchant for the refund reference first.",
            "With the merchant's refund reference we can trace the payment through the card scheme.",
            "When a merchant refuses a refund it owes you, you can raise a dispute about the original transaction.",
            "Partial refunds are common when only some items in an order are returned.",
            "Refunds are shown as separate credits and are linked to the original transaction where the merchant provides the details.",
            "Fees charged on the original purchase, such as foreign transaction fees, are refunded proportionally.",
            "Store credit or vouchers offered instead of a refund are a matter between you and the merchant.",
        ],
    },
    Topic {
        key: "fees",
        titles: &[
            (
                "Account fees overview",
                "the monthly fees and per-transaction charges of each account plan",
            ),
            (
                "Foreign transaction and currency conversion fees",
                "what you pay for card payments and withdrawals in another currency",
            ),
            (
                "ATM withdrawal fees",
                "when a cash withdrawal is free and when fees apply",
            ),
            (
                "Fees for disputes and chargebacks",
                "which dispute and chargeback cases carry a fee and when it is refunded",
            ),
            (
                "Getting a fee refunded",
                "how to ask for a fee to be reviewed and refunded",
            ),
        ],
        sentences: &[
            "The standard account has no monthly fee; premium plans cost between 7 EUR and 15 EUR per month.",
            "Card payments in your account currency are free of charge.",
            "Card payments in another currency carry a foreign transaction fee of 1.5% of the converted amount.",
            "Currency conversion uses the card scheme's exchange rate on the day the transaction is processed.",
            "Cash withdrawals are free up to 200 EUR per month, after which a fee of 2% applies.",
            "ATM operators may add their own fee, which is shown on the machine before you confirm.",
            "Raising a dispute is free, and no fee is charged for a chargeback filed on your behalf.",
            "A fee of 25 EUR may apply when a dispute is found to be friendly fraud.",
            "Fees are listed on your statement as separate transactions with the category fees.",
            "If you believe a fee was charged in error, ask for a review within 60 days.",
            "Fees caused by confirmed fraud or by our own mistake are always refunded.",
            "Replacement cards are free when the card was stolen or compromised, and cost 5 EUR otherwise.",
            "Express card delivery is available for a fee of 15 EUR.",
            "Fee changes are announced at least two months before they take effect.",
            "Premium plans include fee-free foreign payments and higher free withdrawal allowances.",
        ],
    },
];
