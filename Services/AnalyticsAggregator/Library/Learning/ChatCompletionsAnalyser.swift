import Contracts
import Foundation
import HTTPClient
import ServiceLogging
import Settings

/// Where the model is: any OpenAI-compatible chat-completions endpoint.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `AI_API_URL` | (none: no model) | the API base (`https://…/v1`) or the full `…/chat/completions` URL |
/// | `AI_API_KEY` | (none) | sent as `Authorization: Bearer …` |
/// | `AI_MODEL` | `gpt-4o-mini` | the `model` of each request |
/// | `AI_TIMEOUT_SECONDS` | 8 | one attempt's bound |
/// | `AI_RETRIES` | 1 | attempts after the first when one fails (transport, 5xx, 429, an answer off the schema) |
/// | `AI_PIPELINE_BUDGET_SECONDS` | 10 | the most the aggregator waits on the model for one fetched batch of sessions (0: the pipeline uses the built-in analyser only) |
/// | `AI_PIPELINE_CONCURRENCY` | 4 | the model calls one batch has out at once |
public struct AIConfiguration: Sendable {
    public var url: String
    public var apiKey: String?
    public var model: String
    public var timeoutSeconds: Int
    public var retries: Int
    public var pipelineBudgetSeconds: Double
    public var pipelineConcurrency: Int

    public init(url: String, apiKey: String? = nil, model: String = "gpt-4o-mini", timeoutSeconds: Int = 8, retries: Int = 1,
                pipelineBudgetSeconds: Double = 10, pipelineConcurrency: Int = 4) {
        self.url = url
        self.apiKey = apiKey
        self.model = model
        self.timeoutSeconds = timeoutSeconds
        self.retries = retries
        self.pipelineBudgetSeconds = pipelineBudgetSeconds
        self.pipelineConcurrency = pipelineConcurrency
    }

    /// The endpoint of `AI_API_*`, or nil when `AI_API_URL` is not set.
    public static func read(from reader: inout EnvironmentReader) -> AIConfiguration? {
        guard let url = reader.optionalString("AI_API_URL") else { return nil }
        return AIConfiguration(url: url, apiKey: reader.optionalString("AI_API_KEY"),
                               model: reader.string("AI_MODEL", default: "gpt-4o-mini"),
                               timeoutSeconds: reader.int("AI_TIMEOUT_SECONDS", default: 8, range: 1...120),
                               retries: reader.int("AI_RETRIES", default: 1, range: 0...5),
                               pipelineBudgetSeconds: reader.double("AI_PIPELINE_BUDGET_SECONDS", default: 10, range: 0...120),
                               pipelineConcurrency: reader.int("AI_PIPELINE_CONCURRENCY", default: 4, range: 1...64))
    }

    /// The chat-completions URL.
    var endpoint: String {
        let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
        return trimmed.hasSuffix("/chat/completions") ? trimmed : trimmed + "/chat/completions"
    }
}

/// The model adapter: asks an OpenAI-compatible chat-completions endpoint for the seed's
/// analysis object (`003_*` §五) as JSON, checks what comes back against the seed's schema, and
/// falls back to the built-in analyser when the endpoint times out, fails, or answers off the
/// schema after its retries — an answer always comes back, within
/// `(retries + 1) × timeoutSeconds` plus the backoff.
public struct ChatCompletionsAnalyser: Sendable {
    public let configuration: AIConfiguration
    let fallback = BuiltinLearningAnalyser()
    let logger: Logger

    public init(configuration: AIConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Why an attempt did not give an analysis.
    struct AttemptFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// The model's analysis (its name as `analyzer`), else the built-in one (`builtin`).
    public func analyse(lesson: Lesson?, questionId: String?, answer: String) async -> (analysis: LearningAnalysis, analyzer: String) {
        if answer.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return (fallback.analyse(lesson: lesson, questionId: questionId, answer: answer), BuiltinLearningAnalyser.name)
        }
        let messages = Self.analysisMessages(lesson: lesson, questionId: questionId, answer: answer)
        for attempt in 0...configuration.retries {
            if attempt > 0 { try? await Task.sleep(for: .milliseconds(200 << min(attempt - 1, 4))) }
            do {
                let content = try await complete(messages, json: true)
                return (try Self.parseAnalysis(content), configuration.model)
            } catch {
                logger.warning("model analysis attempt failed", metadata: ["ai.attempt": "\(attempt + 1)", "error": "\(error)"])
            }
        }
        logger.warning("model analysis unavailable; the built-in analyser answered", metadata: ["ai.model": configuration.model])
        return (fallback.analyse(lesson: lesson, questionId: questionId, answer: answer), BuiltinLearningAnalyser.name)
    }

    /// One chat turn over the lesson (`POST /ai/chat`); nil when the endpoint gave no answer.
    public func chat(lesson: Lesson, message: String) async -> String? {
        let system = """
            You are the study coach of a learning app. Answer only about the lesson below; if the question is about \
            anything else, say that you can only help with this lesson. Answer in the language of the question, briefly.

            Lesson: \(lesson.title)
            \(lesson.body)
            Key concepts: \(lesson.keyConcepts.joined(separator: "; "))
            """
        for attempt in 0...configuration.retries {
            if attempt > 0 { try? await Task.sleep(for: .milliseconds(200 << min(attempt - 1, 4))) }
            if let text = try? await complete([["role": "system", "content": system], ["role": "user", "content": message]], json: false),
               !text.isEmpty {
                return text
            }
        }
        return nil
    }

    /// The first choice's message content.
    func complete(_ messages: [[String: String]], json: Bool) async throws -> String {
        var body: [String: Any] = ["model": configuration.model, "messages": messages, "temperature": 0]
        if json { body["response_format"] = ["type": "json_object"] }
        var headers = [("Content-Type", "application/json"), ("Accept", "application/json")]
        if let key = configuration.apiKey { headers.append(("Authorization", "Bearer \(key)")) }
        let exchange = HTTPExchange(method: "POST", url: configuration.endpoint, headers: headers,
                                    body: .bytes(Array(try JSONSerialization.data(withJSONObject: body))),
                                    timeoutSeconds: configuration.timeoutSeconds)
        let answer: HTTPAnswer
        do { answer = try await CurlTransfer.perform(exchange, label: "analytics.ai") } catch {
            throw AttemptFailure(description: "transport: \(error.message)")
        }
        guard (200..<300).contains(answer.status) else { throw AttemptFailure(description: "status \(answer.status)") }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any],
              let choices = object["choices"] as? [[String: Any]], let message = choices.first?["message"] as? [String: Any],
              let content = message["content"] as? String else {
            throw AttemptFailure(description: "not a chat-completions answer")
        }
        return content
    }

    static func analysisMessages(lesson: Lesson?, questionId: String?, answer: String) -> [[String: String]] {
        let questions = (lesson?.recallQuestions ?? []).filter { questionId == nil || $0.id == questionId }
        let system = """
            You analyse a learner's recall answer to a lesson. Reply with one JSON object and nothing else, with exactly these keys: \
            "masteryScore" (integer 0-5: 0 没有作答/无法判断, 1 基本没理解, 2 理解较弱, 3 基本理解, 4 理解较好, 5 掌握很好), \
            "understandingLevel" (the word for the score, from that list), "summary" (one sentence), "strengths" (array of strings), \
            "weakPoints" (array of strings: missing or wrong points), "suggestions" (array of strings), \
            "reviewNeeded" (boolean), "nextAction" (one sentence). Judge coverage of the key concepts and expected points, \
            logical structure, clarity and misunderstandings. Write the texts in the language of the answer.
            """
        var user = "Lesson: \(lesson?.title ?? "(unknown)")\nKey concepts: \((lesson?.keyConcepts ?? []).joined(separator: "; "))\n"
        for question in questions {
            user += "Question: \(question.question)\nExpected points: \(question.expectedPoints.joined(separator: "; "))\n"
        }
        user += "Answer:\n\(answer)"
        return [["role": "system", "content": system], ["role": "user", "content": user]]
    }

    /// The content as the seed's object: a JSON object (a Markdown code fence around it is
    /// tolerated) with every field of the right type and a score 0–5; the level word is the
    /// seed's for the score whatever the model wrote.
    static func parseAnalysis(_ content: String) throws -> LearningAnalysis {
        var text = content.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("```"), let open = text.firstIndex(of: "\n"), let close = text.range(of: "```", options: .backwards),
           close.lowerBound > open {
            text = String(text[text.index(after: open)..<close.lowerBound])
        }
        var analysis: LearningAnalysis
        do { analysis = try ContractCoding.decode(LearningAnalysis.self, from: Array(text.utf8)) } catch {
            throw AttemptFailure(description: "content is not the analysis object")
        }
        guard (0...5).contains(analysis.masteryScore) else { throw AttemptFailure(description: "masteryScore \(analysis.masteryScore)") }
        analysis.understandingLevel = LearningAnalysis.level(for: analysis.masteryScore)
        let limit = 20
        analysis.strengths = Array(analysis.strengths.prefix(limit))
        analysis.weakPoints = Array(analysis.weakPoints.prefix(limit))
        analysis.suggestions = Array(analysis.suggestions.prefix(limit))
        do { try analysis.validate() } catch { throw AttemptFailure(description: error.description) }
        return analysis
    }
}
