//! Parts of synthetic company and vessel names. The combinations are invented; none is meant
//! to name a real company or ship.

/// Russian company name stems (Latin, Cyrillic) that compound with [`RUSSIAN_SUFFIXES`].
pub const RUSSIAN_STEMS: &[(&str, &str)] = &[
    ("Volga", "Волга"),
    ("Ural", "Урал"),
    ("Sib", "Сиб"),
    ("Balt", "Балт"),
    ("Neva", "Нева"),
    ("Amur", "Амур"),
    ("Kama", "Кама"),
    ("Oka", "Ока"),
    ("Angara", "Ангара"),
    ("Taimyr", "Таймыр"),
    ("Arktik", "Арктик"),
    ("Pechora", "Печора"),
    ("Sever", "Север"),
    ("Vostok", "Восток"),
    ("Zapad", "Запад"),
    ("Kuban", "Кубань"),
    ("Irtysh", "Иртыш"),
    ("Yamal", "Ямал"),
    ("Altai", "Алтай"),
    ("Baikal", "Байкал"),
    ("Sakhalin", "Сахалин"),
    ("Primor", "Примор"),
    ("Ladoga", "Ладога"),
    ("Onega", "Онега"),
];

/// Russian company name suffixes (Latin, Cyrillic).
pub const RUSSIAN_SUFFIXES: &[(&str, &str)] = &[
    ("trans", "транс"),
    ("neft", "нефть"),
    ("gaz", "газ"),
    ("metall", "металл"),
    ("prom", "пром"),
    ("stroy", "строй"),
    ("invest", "инвест"),
    ("tekh", "тех"),
    ("snab", "снаб"),
    ("eksport", "экспорт"),
    ("flot", "флот"),
    ("les", "лес"),
    ("khim", "хим"),
    ("energo", "энерго"),
    ("agro", "агро"),
    ("resurs", "ресурс"),
];

/// Sector words for Russian companies (Latin, Cyrillic), or none.
pub const RUSSIAN_SECTORS: &[(&str, &str)] = &[
    ("", ""),
    ("Trading", "Трейдинг"),
    ("Group", "Групп"),
    ("Holding", "Холдинг"),
    ("Logistics", "Логистикс"),
    ("Engineering", "Инжиниринг"),
];

/// Russian legal forms: (Latin abbreviation, Latin long form, Cyrillic abbreviation).
pub const RUSSIAN_LEGAL: &[(&str, &str, &str)] = &[
    ("LLC", "Limited Liability Company", "ООО"),
    ("JSC", "Joint Stock Company", "АО"),
    ("PJSC", "Public Joint Stock Company", "ПАО"),
];

/// Brands of Gulf and Levant trading houses: (Latin, Arabic with the article).
pub const ARABIC_BRANDS: &[(&str, &str)] = &[
    ("Noor", "النور"),
    ("Amal", "الأمل"),
    ("Baraka", "البركة"),
    ("Salam", "السلام"),
    ("Fajr", "الفجر"),
    ("Hilal", "الهلال"),
    ("Sahara", "الصحراء"),
    ("Khaleej", "الخليج"),
    ("Diyar", "الديار"),
    ("Waha", "الواحة"),
    ("Rayyan", "الريان"),
    ("Jazeera", "الجزيرة"),
    ("Bayan", "البيان"),
    ("Majd", "المجد"),
    ("Reem", "الريم"),
    ("Safwa", "الصفوة"),
    ("Thuraya", "الثريا"),
    ("Yasmin", "الياسمين"),
    ("Marjan", "المرجان"),
    ("Rimal", "الرمال"),
    ("Sadaf", "الصدف"),
    ("Durra", "الدرة"),
    ("Falak", "الفلك"),
    ("Nakhla", "النخلة"),
    ("Ghazal", "الغزال"),
    ("Sanabel", "السنابل"),
    ("Manar", "المنار"),
    ("Bustan", "البستان"),
];

/// Sectors of the trading houses.
pub const ARABIC_SECTORS: &[&str] = &[
    "General Trading",
    "Shipping",
    "Petroleum Services",
    "Exchange",
    "Contracting",
    "Logistics",
    "Import & Export",
    "Investments",
    "Foodstuff Trading",
    "Electronics Trading",
];

/// Legal forms common in the Gulf and Levant.
pub const ARABIC_LEGAL: &[&str] = &["LLC", "FZE", "FZCO", "Est.", "W.L.L.", "Co."];

/// Brands of Iranian companies.
pub const PERSIAN_BRANDS: &[&str] = &[
    "Pars", "Kish", "Arya", "Sina", "Karun", "Alborz", "Zagros", "Damavand", "Khazar", "Hormoz",
    "Tavan", "Pishgam", "Sepahan", "Mehr", "Negin", "Setareh", "Azar", "Golestan", "Shahab",
    "Kavir", "Sahand", "Arvand", "Bahar", "Nikan",
];

/// Sectors of Iranian companies.
pub const PERSIAN_SECTORS: &[&str] = &[
    "Petrochemical",
    "Shipping Lines",
    "Trading",
    "Engineering Group",
    "Industrial Group",
    "Aviation",
    "Electronics",
    "Steel",
    "Drilling",
    "Marine Services",
];

/// Chinese city names used as company prefixes.
pub const CHINESE_PLACES: &[&str] = &[
    "Shenzhen",
    "Guangzhou",
    "Dalian",
    "Ningbo",
    "Xiamen",
    "Tianjin",
    "Qingdao",
    "Hong Kong",
    "Zhuhai",
    "Shanghai",
];

/// Chinese company brands (pinyin, written as one word).
pub const CHINESE_BRANDS: &[&str] = &[
    "Huaxing",
    "Tianyuan",
    "Jinlong",
    "Hengtai",
    "Xinda",
    "Ruifeng",
    "Haixin",
    "Zhongtai",
    "Dongfang",
    "Yuanda",
    "Fuhai",
    "Longsheng",
    "Kaida",
    "Baoli",
    "Hongda",
    "Jiahe",
    "Mingyang",
    "Shengtai",
    "Weilong",
    "Xiangyu",
    "Jinhai",
    "Tianli",
];

/// Sectors of Chinese companies.
pub const CHINESE_SECTORS: &[&str] = &[
    "Electronics",
    "Trading",
    "Shipping",
    "Technology",
    "Chemical",
    "Logistics",
    "Import and Export",
    "Industrial",
    "Machinery",
    "Petroleum",
];

/// First halves of compound Western shell-company names.
pub const WESTERN_FIRST: &[&str] = &[
    "North", "South", "East", "West", "Blue", "Red", "Silver", "Gold", "Iron", "Stone", "Oak",
    "Pine", "Black", "White", "Green", "High", "Deep", "Bright",
];

/// Second halves of compound Western shell-company names.
pub const WESTERN_SECOND: &[&str] = &[
    "bridge", "harbor", "crest", "field", "gate", "haven", "ridge", "water", "wood", "stone",
    "brook", "point", "well", "moor", "vale",
];

/// Sectors of Western shell companies.
pub const WESTERN_SECTORS: &[&str] = &[
    "Capital",
    "Commodities",
    "Resources",
    "Maritime",
    "Holdings",
    "Ventures",
    "Trading",
    "Energy",
    "Metals",
    "Logistics",
    "Partners",
    "Investments",
    "Shipping",
    "Aviation",
];

/// Legal forms of Western shell companies: (form, alternative spelling).
pub const WESTERN_LEGAL: &[(&str, &str)] = &[
    ("Ltd", "Limited"),
    ("LLC", "L.L.C."),
    ("Inc.", "Incorporated"),
    ("S.A.", "SA"),
    ("AG", "A.G."),
    ("GmbH", "G.m.b.H."),
    ("B.V.", "BV"),
    ("Corp.", "Corporation"),
    ("PLC", "Public Limited Company"),
    ("LLP", "L.L.P."),
];

/// First words of vessel names.
pub const VESSEL_FIRST: &[&str] = &[
    "Ocean", "Sea", "Pacific", "Atlantic", "Arctic", "Golden", "Silver", "Blue", "Northern",
    "Southern", "Eastern", "Royal", "Grand", "Lucky", "Crystal", "Emerald", "Coral", "Polar",
    "Ruby", "Jade", "Amber", "Sapphire", "Tropical", "Baltic",
];

/// Second words of vessel names.
pub const VESSEL_SECOND: &[&str] = &[
    "Star",
    "Pearl",
    "Spirit",
    "Dawn",
    "Horizon",
    "Wave",
    "Glory",
    "Fortune",
    "Princess",
    "Queen",
    "Eagle",
    "Falcon",
    "Breeze",
    "Voyager",
    "Pioneer",
    "Explorer",
    "Harmony",
    "Grace",
    "Light",
    "Wind",
    "Dream",
    "Crown",
    "Jewel",
    "Mariner",
    "Navigator",
    "Venture",
];

/// Rank words for Russian-named vessels (Latin, Cyrillic).
pub const VESSEL_RANKS: &[(&str, &str)] = &[
    ("Kapitan", "Капитан"),
    ("Akademik", "Академик"),
    ("Inzhener", "Инженер"),
];

/// Flag states of the synthetic fleet (ISO 3166-1 alpha-2).
pub const FLAGS: &[&str] = &[
    "PA", "LR", "MH", "KM", "CM", "TG", "MT", "IR", "RU", "KP", "SL", "GA", "PW", "TZ", "BZ", "CK",
    "VC", "KN", "HK", "CY",
];
