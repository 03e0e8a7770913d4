//! Chinese (simplified characters, pinyin with Cantonese / Wade–Giles surname variants) and
//! Korean (McCune–Reischauer as printed on lists, with South Korean spellings as variants).

use super::{Family, Given, f, fam, m};

/// Chinese family names.
pub const CHINESE_FAMILY: &[Family] = &[
    fam("Wang", &["Wong"], "王"),
    fam("Li", &["Lee", "Lei"], "李"),
    fam("Zhang", &["Cheung", "Chang"], "张"),
    fam("Liu", &["Lau", "Lew"], "刘"),
    fam("Chen", &["Chan", "Chin"], "陈"),
    fam("Yang", &["Yeung", "Yong"], "杨"),
    fam("Huang", &["Hwang", "Wong"], "黄"),
    fam("Zhao", &["Chiu", "Chao"], "赵"),
    fam("Zhou", &["Chow", "Chou"], "周"),
    fam("Wu", &["Woo", "Ng"], "吴"),
    fam("Xu", &["Hsu", "Tsui"], "徐"),
    fam("Sun", &["Suen", "Soon"], "孙"),
    fam("Ma", &["Mah", "Mar"], "马"),
    fam("Zhu", &["Chu", "Chue"], "朱"),
    fam("Guo", &["Kwok", "Kuo"], "郭"),
    fam("He", &["Ho", "Hoh"], "何"),
    fam("Lin", &["Lam", "Lim"], "林"),
    fam("Luo", &["Law", "Lo"], "罗"),
    fam("Gao", &["Kao", "Ko"], "高"),
    fam("Zheng", &["Cheng", "Tay"], "郑"),
    fam("Liang", &["Leung", "Leong"], "梁"),
    fam("Xie", &["Tse", "Hsieh"], "谢"),
    fam("Song", &["Sung", "Soong"], "宋"),
    fam("Tang", &["Tong", "Thong"], "唐"),
    fam("Feng", &["Fung", "Fong"], "冯"),
    fam("Cao", &["Tsao", "Cho"], "曹"),
];

/// Chinese given names (pinyin written as one word, as passports do).
pub const CHINESE_GIVEN: &[Given] = &[
    m("Jianguo", &["Jian Guo", "Chien-kuo"], "建国"),
    m("Zhiqiang", &["Zhi Qiang", "Chih-chiang"], "志强"),
    m("Haitao", &["Hai Tao", "Hai-tao"], "海涛"),
    m("Xiaoming", &["Xiao Ming", "Hsiao-ming"], "晓明"),
    m("Jianhua", &["Jian Hua", "Chien-hua"], "建华"),
    m("Guoqiang", &["Guo Qiang", "Kuo-chiang"], "国强"),
    m("Wenjie", &["Wen Jie", "Wen-chieh"], "文杰"),
    m("Zhenhua", &["Zhen Hua", "Chen-hua"], "振华"),
    m("Deming", &["De Ming", "Te-ming"], "德明"),
    m("Yongsheng", &["Yong Sheng", "Yung-sheng"], "永胜"),
    m("Chunsheng", &["Chun Sheng", "Chun-sheng"], "春生"),
    m("Lixin", &["Li Xin", "Li-hsin"], "立新"),
    m("Hongwei", &["Hong Wei", "Hung-wei"], "宏伟"),
    m("Junjie", &["Jun Jie", "Chun-chieh"], "俊杰"),
    m("Tianyou", &["Tian You", "Tien-yu"], "天佑"),
    m("Wei", &["Wai"], "伟"),
    m("Lei", &["Lui"], "磊"),
    m("Qiang", &["Keung", "Chiang"], "强"),
    m("Yong", &["Yung"], "勇"),
    m("Jie", &["Kit", "Chieh"], "杰"),
    m("Tao", &["To"], "涛"),
    m("Bin", &["Ben"], "斌"),
    m("Hao", &["Ho"], "浩"),
    m("Peng", &["Pang"], "鹏"),
    f("Lihua", &["Li Hua", "Li-hua"], "丽华"),
    f("Xiaoling", &["Xiao Ling", "Hsiao-ling"], "晓玲"),
    f("Hongmei", &["Hong Mei", "Hung-mei"], "红梅"),
    f("Fang", &["Fong"], "芳"),
    f("Jing", &["Ching"], "静"),
    f("Min", &["Man"], "敏"),
    f("Yan", &["Yin"], "燕"),
];

/// Korean family names.
pub const KOREAN_FAMILY: &[Family] = &[
    fam("Kim", &["Gim"], ""),
    fam("Ri", &["Lee", "Rhee", "Yi"], ""),
    fam("Pak", &["Park", "Bak"], ""),
    fam("Choe", &["Choi", "Chey"], ""),
    fam("Jong", &["Jung", "Chong", "Jeong"], ""),
    fam("Kang", &["Gang"], ""),
    fam("Han", &["Hahn"], ""),
    fam("Yun", &["Yoon", "Youn"], ""),
    fam("Jang", &["Chang"], ""),
    fam("Sin", &["Shin"], ""),
    fam("Hwang", &["Whang"], ""),
    fam("Ryu", &["Yu", "Yoo"], ""),
];

/// Korean given names (two syllables written as two tokens, as lists print them).
pub const KOREAN_GIVEN: &[Given] = &[
    m("Yong Su", &["Yong-su", "Young Soo"], ""),
    m("Song Il", &["Song-il", "Sung Il"], ""),
    m("Chol Su", &["Chol-su", "Chul Soo"], ""),
    m("Myong Hak", &["Myong-hak", "Myung Hak"], ""),
    m("Chol Ho", &["Chol-ho", "Chul Ho"], ""),
    m("Kwang Ho", &["Kwang-ho", "Gwang Ho"], ""),
    m("Hyon Su", &["Hyon-su", "Hyun Soo"], ""),
    m("Chang Ho", &["Chang-ho", "Chang Hoh"], ""),
    m("Tae Song", &["Tae-song", "Tae Sung"], ""),
    m("Su Gil", &["Su-gil", "Soo Gil"], ""),
    m("Il Nam", &["Il-nam", "Il Nahm"], ""),
    m("Myong Chol", &["Myong-chol", "Myung Chul"], ""),
    f("Kyong Hui", &["Kyong-hui", "Kyung Hee"], ""),
    f("Myong Ok", &["Myong-ok", "Myung Ok"], ""),
    f("Son Hui", &["Son-hui", "Sun Hee"], ""),
];
