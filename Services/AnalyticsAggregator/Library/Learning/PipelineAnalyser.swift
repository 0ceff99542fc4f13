import Contracts
import Foundation
import Synchronization

/// Who analyses the sessions of the pipeline: the built-in analyser, or — when a model endpoint
/// is configured (`AI_API_URL`) — the model adapter, bounded per fetched batch so the pipeline
/// never waits on the model longer than `AI_PIPELINE_BUDGET_SECONDS`.
///
/// The batch's answers are sent `AI_PIPELINE_CONCURRENCY` at a time; each goes through the
/// adapter (its own timeout, retries, check of the seed's schema, and fallback); when the budget
/// is spent, every answer without the model's analysis yet gets the built-in one, and the calls
/// still out are left to finish unheard. Each session records which analyser produced it (the
/// model's name, or `builtin`).
struct PipelineAnalyser: Sendable {
    let builtin = BuiltinLearningAnalyser()
    let model: ChatCompletionsAnalyser?
    let budget: Duration
    let concurrency: Int

    init(model: ChatCompletionsAnalyser? = nil) {
        self.model = model
        self.budget = .seconds(model?.configuration.pipelineBudgetSeconds ?? 0)
        self.concurrency = max(1, model?.configuration.pipelineConcurrency ?? 1)
    }

    struct Question: Sendable {
        var lesson: Lesson?
        var questionId: String?
        var answer: String
    }

    /// The analysis and analyser of each question, in order.
    func analyse(_ questions: [Question]) async -> [(analysis: LearningAnalysis, analyzer: String)] {
        let local = questions.map { (builtin.analyse(lesson: $0.lesson, questionId: $0.questionId, answer: $0.answer),
                                     BuiltinLearningAnalyser.name) }
        guard let model, budget > .zero, !questions.isEmpty else { return local }
        let answers = await Self.bounded(questions, model: model, budget: budget, concurrency: concurrency)
        return questions.indices.map { answers[$0] ?? local[$0] }
    }

    /// The model's answers that came within `budget` (the adapter's own fallbacks included).
    static func bounded(_ questions: [Question], model: ChatCompletionsAnalyser, budget: Duration,
                        concurrency: Int) async -> [Int: (analysis: LearningAnalysis, analyzer: String)] {
        let (stream, continuation) = AsyncStream<(Int, LearningAnalysis, String)?>.makeStream()
        let next = Ticket()
        var workers: [Task<Void, Never>] = []
        for _ in 0..<min(concurrency, questions.count) {
            workers.append(Task {
                while !Task.isCancelled {
                    let index = next.take()
                    guard index < questions.count else { return }
                    let question = questions[index]
                    let result = await model.analyse(lesson: question.lesson, questionId: question.questionId, answer: question.answer)
                    continuation.yield((index, result.analysis, result.analyzer))
                }
            })
        }
        let timer = Task {
            try? await Task.sleep(for: budget)
            continuation.yield(nil)
        }
        var answers: [Int: (analysis: LearningAnalysis, analyzer: String)] = [:]
        for await item in stream {
            guard let (index, analysis, analyzer) = item else { break }
            answers[index] = (analysis, analyzer)
            if answers.count == questions.count { break }
        }
        continuation.finish()
        timer.cancel()
        // The calls still out finish in the background (each bounded by the adapter's timeout
        // and retries); no new one starts.
        for worker in workers { worker.cancel() }
        return answers
    }
}

/// Hands out 0, 1, 2… to the workers of one batch.
private final class Ticket: Sendable {
    private let next = Mutex(0)
    func take() -> Int {
        next.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}
