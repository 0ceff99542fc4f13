import Contracts
import Foundation

/// The analyser that needs no model: how much of the lesson's key concepts and of the recall
/// question's expected points an answer holds, how long it is and whether it has structure,
/// mapped onto the seed's 0–5 scale (`003_*` §五). Deterministic: the same lesson and answer
/// give the same analysis, so a replay or a rebuild reproduces it.
///
/// **Matching.** Text is normalised (lower case, full-width forms folded) and cut into terms:
/// each run of Han/Kana/Hangul characters gives its character bigrams (a single character
/// alone gives itself), each run of letters and digits gives one word, lightly stemmed
/// (`-ing`, `-ed`, `-es`, `-s` dropped from words over four letters). A concept or point is
/// *covered* when the answer holds at least `coverageThreshold` (default 0.6) of its distinct
/// terms. Bigrams need no word segmenter for Chinese and tolerate a changed word order; they
/// cannot see synonyms or paraphrase (`记忆曲线` for `遗忘曲线` shares one bigram of three) nor
/// negation (`不是间隔重复` covers `间隔重复`): that is what the model adapter is for.
///
/// **Score.** `coverage` = the share of expected points covered (weight 0.6) and of key
/// concepts covered (0.4; either alone when the other is empty); `length` = answer units
/// (a CJK character or a word) over `minAnswerUnits` (default 20), at most 1; `structure` =
/// 0.5 for two or more sentences or list items, 0.5 for a connective (因为, 所以, 首先, 例如,
/// because, therefore, first, for example…). score = round(4·coverage + 0.5·length +
/// 0.5·structure), at least 1 for any non-empty answer; an empty answer is 0. The score never
/// falls when coverage rises and the rest stays.
public struct BuiltinLearningAnalyser: Sendable {
    public static let name = "builtin"
    public static let defaultCoverageThreshold = 0.6
    public static let defaultMinAnswerUnits = 20

    public init() {}

    /// What the analysis found, beside the seed's object (for tests and documentation).
    public struct Findings: Sendable, Hashable {
        public var coverage: Double
        public var coveredConcepts: [String]
        public var missedConcepts: [String]
        public var coveredPoints: [String]
        public var missedPoints: [String]
        public var units: Int
        public var length: Double
        public var structure: Double
        public var chinese: Bool
    }

    public func analyse(lesson: Lesson?, questionId: String?, answer: String) -> LearningAnalysis {
        examine(lesson: lesson, questionId: questionId, answer: answer).analysis
    }

    /// The analysis and what it was made from.
    public func examine(lesson: Lesson?, questionId: String?, answer: String) -> (analysis: LearningAnalysis, findings: Findings) {
        let answerTerms = Set(Self.terms(answer))
        let threshold = lesson?.analysisRules?.coverageThreshold ?? Self.defaultCoverageThreshold
        let minUnits = lesson?.analysisRules?.minAnswerUnits ?? Self.defaultMinAnswerUnits
        let concepts = lesson?.keyConcepts ?? []
        let questions = lesson?.recallQuestions.filter { questionId == nil || $0.id == questionId } ?? []
        let points = (questions.isEmpty ? lesson?.recallQuestions ?? [] : questions).flatMap(\.expectedPoints)

        func covered(_ text: String) -> Bool {
            let wanted = Set(Self.terms(text))
            guard !wanted.isEmpty else { return false }
            return Double(wanted.intersection(answerTerms).count) / Double(wanted.count) >= threshold
        }
        let conceptHits = concepts.map { ($0, covered($0)) }
        let pointHits = points.map { ($0, covered($0)) }
        func share(_ hits: [(String, Bool)]) -> Double? {
            hits.isEmpty ? nil : Double(hits.count { $0.1 }) / Double(hits.count)
        }
        let coverage: Double = switch (share(pointHits), share(conceptHits)) {
        case let (p?, c?): 0.6 * p + 0.4 * c
        case let (p?, nil): p
        case let (nil, c?): c
        case (nil, nil): 0
        }
        let units = Self.units(answer)
        let length = min(1, Double(units) / Double(max(1, minUnits)))
        let structure = Self.structure(answer)
        let chinese = Self.isMostlyChinese(answer.isEmpty ? (lesson?.title ?? "") : answer)
        let score: Int
        if units == 0 {
            score = 0
        } else {
            score = max(1, min(5, Int((4 * coverage + 0.5 * length + 0.5 * structure).rounded(.toNearestOrAwayFromZero))))
        }
        let findings = Findings(
            coverage: coverage, coveredConcepts: conceptHits.filter(\.1).map(\.0), missedConcepts: conceptHits.filter { !$0.1 }.map(\.0),
            coveredPoints: pointHits.filter(\.1).map(\.0), missedPoints: pointHits.filter { !$0.1 }.map(\.0), units: units,
            length: length, structure: structure, chinese: chinese)
        return (Self.compose(score: score, findings: findings, minUnits: minUnits), findings)
    }

    // MARK: - Wording

    static func compose(score: Int, findings f: Findings, minUnits: Int) -> LearningAnalysis {
        let zh = f.chinese
        func list(_ items: [String]) -> String { items.prefix(3).joined(separator: zh ? "、" : ", ") }
        var strengths: [String] = []
        var weak: [String] = []
        var suggestions: [String] = []
        let covered = f.coveredPoints + f.coveredConcepts
        let missed = f.missedPoints + f.missedConcepts
        if !covered.isEmpty { strengths.append(zh ? "覆盖了要点：\(list(covered))" : "Covers: \(list(covered))") }
        if f.structure >= 1 { strengths.append(zh ? "表达有条理，有因果或层次" : "Well structured, with reasons or steps") }
        if f.units > 0, f.length >= 1 { strengths.append(zh ? "回答完整，篇幅充分" : "A complete, full-length answer") }
        if !missed.isEmpty {
            weak.append(zh ? "遗漏关键要点：\(list(missed))" : "Misses key points: \(list(missed))")
            suggestions.append(zh ? "补充材料中的要点：\(list(missed))" : "Add the lesson's points: \(list(missed))")
        }
        if f.units > 0, f.length < 1 {
            weak.append(zh ? "回答过短" : "The answer is short")
            suggestions.append(zh ? "用至少 \(minUnits) 个字完整作答" : "Answer in at least \(minUnits) words")
        }
        if f.units > 0, f.structure < 1 {
            weak.append(zh ? "逻辑层次不够清晰" : "The reasoning is not laid out")
            suggestions.append(zh ? "回答时先概括问题，再展开原因" : "State the idea first, then give the reasons")
        }
        let summary: String
        let next: String
        switch score {
        case 0:
            summary = zh ? "没有作答，无法判断理解程度。" : "No answer, so understanding cannot be judged."
            next = zh ? "先重读本节，再回答主动回忆问题。" : "Reread this lesson, then answer the recall question."
        case 1, 2:
            summary = zh ? "回答没有覆盖本节的主要内容。" : "The answer does not cover the lesson's main content."
            next = zh ? "建议重读本节，明天复习并重新回答主动回忆问题。" : "Reread this lesson; review it tomorrow and answer the recall question again."
        case 3:
            summary = zh ? "能说出核心意思，但要点不够完整。" : "The core idea is there, but points are missing."
            next = zh ? "建议明天复习本节，并重新回答主动回忆问题。" : "Review this lesson tomorrow and answer the recall question again."
        default:
            summary = zh ? "回答覆盖了本节的主要要点。" : "The answer covers the lesson's main points."
            next = zh ? "可以进入下一节，按复习计划巩固本节。" : "Go on to the next lesson; the review plan will bring this one back."
        }
        return LearningAnalysis(masteryScore: score, understandingLevel: LearningAnalysis.level(for: score), summary: summary,
                                strengths: strengths, weakPoints: weak, suggestions: suggestions, reviewNeeded: score < 4,
                                nextAction: next)
    }

    // MARK: - Terms

    static func isCJK(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3040...0x30FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xAC00...0xD7AF, 0xF900...0xFAFF, 0x20000...0x2FA1F: true
        default: false
        }
    }

    /// Full-width ASCII folded to ASCII, then lower-cased.
    static func normalise(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if (0xFF01...0xFF5E).contains(scalar.value), let folded = Unicode.Scalar(scalar.value - 0xFEE0) {
                scalars.append(folded)
            } else {
                scalars.append(scalar)
            }
        }
        return String(scalars).lowercased()
    }

    /// CJK bigrams and stemmed words, in order.
    public static func terms(_ text: String) -> [String] {
        var out: [String] = []
        var run: [Unicode.Scalar] = []
        var word = String.UnicodeScalarView()
        func flushRun() {
            if run.count == 1 { out.append(String(Character(run[0]))) }
            if run.count >= 2 {
                for i in 0..<(run.count - 1) {
                    var pair = String.UnicodeScalarView()
                    pair.append(run[i])
                    pair.append(run[i + 1])
                    out.append(String(pair))
                }
            }
            run.removeAll(keepingCapacity: true)
        }
        func flushWord() {
            if !word.isEmpty { out.append(stem(String(word))) }
            word = String.UnicodeScalarView()
        }
        for scalar in normalise(text).unicodeScalars {
            if isCJK(scalar) {
                flushWord()
                run.append(scalar)
            } else if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                flushRun()
                word.append(scalar)
            } else {
                flushRun()
                flushWord()
            }
        }
        flushRun()
        flushWord()
        return out.filter { !stopWords.contains($0) }
    }

    static let stopWords: Set<String> = ["a", "an", "the", "of", "to", "and", "or", "in", "on", "is", "are", "it", "for", "by", "with"]

    static func stem(_ word: String) -> String {
        guard word.count > 4 else { return word }
        for suffix in ["ing", "ed", "es", "s"] where word.hasSuffix(suffix) {
            return String(word.dropLast(suffix.count))
        }
        return word
    }

    /// A CJK character or a word each.
    static func units(_ text: String) -> Int {
        var count = 0
        var inWord = false
        for scalar in text.unicodeScalars {
            if isCJK(scalar) {
                count += 1
                inWord = false
            } else if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if !inWord { count += 1 }
                inWord = true
            } else {
                inWord = false
            }
        }
        return count
    }

    static let connectives = ["因为", "所以", "因此", "首先", "其次", "然后", "最后", "例如", "比如", "但是", "而且", "总之",
                              "because", "therefore", "so that", "first", "second", "then", "finally", "for example",
                              "for instance", "however", "which means"]

    static func structure(_ text: String) -> Double {
        let lowered = normalise(text)
        let pieces = lowered.split { "。！？!?；;\n".contains($0) }.filter { units(String($0)) >= 2 }
        let sentences = pieces.count + lowered.split(separator: ". ").count - 1
        var value = sentences >= 2 ? 0.5 : 0
        if connectives.contains(where: { lowered.contains($0) }) { value += 0.5 }
        return value
    }

    static func isMostlyChinese(_ text: String) -> Bool {
        var cjk = 0
        var latin = 0
        for scalar in text.unicodeScalars {
            if isCJK(scalar) { cjk += 1 } else if scalar.properties.isAlphabetic { latin += 1 }
        }
        // A CJK character carries about a word; Latin letters about five to a word.
        return cjk * 5 >= latin
    }
}
