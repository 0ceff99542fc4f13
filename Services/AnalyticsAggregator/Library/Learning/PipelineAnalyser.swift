import Contracts
import Foundation
import Lifecycle
import Synchronization

/// Who analyses the sessions of the pipeline: the built-in analyser, or — when a model endpoint
/// is configured (`AI_API_URL`) — the model adapter, bounded per fetched batch so the pipeline
/// never waits on the model longer than `AI_PIPELINE_BUDGET_SECONDS`.
///
/// The batch's answers are sent `AI_PIPELINE_CONCURRENCY` at a time; each goes through the
/// adapter (its own timeout, retries, check of the seed's schema, and fallback); when the budget
/// is spent, every answer without the model's analysis yet gets the built-in one, and the calls
/// still out are left to finish unheard — in `calls`, which the service waits for when it stops
/// (each call is bounded by the adapter's timeout and retries). Each session records which
/// analyser produced it (the model's name, or `builtin`).
struct PipelineAnalyser: Sendable {
    let builtin = BuiltinLearningAnalyser()
    let model: ChatCompletionsAnalyser?
    let budget: Duration
    let concurrency: Int
    /// The model calls of every batch, and each batch's budget timer: they may outlive the
    /// batch (a call out when the budget is spent), never the service.
    let calls = TaskSet()

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
        let answers = await Self.bounded(questions, model: model, budget: budget, concurrency: concurrency, in: calls)
        return questions.indices.map { answers[$0] ?? local[$0] }
    }

    /// The model's answers that came within `budget` (the adapter's own fallbacks included).
    static func bounded(_ questions: [Question], model: ChatCompletionsAnalyser, budget: Duration,
                        concurrency: Int, in calls: TaskSet) async -> [Int: (analysis: LearningAnalysis, analyzer: String)] {
        let (stream, continuation) = AsyncStream<(Int, LearningAnalysis, String)?>.makeStream()
        let next = Ticket()
        let done = OneShotSignal()
        for _ in 0..<min(concurrency, questions.count) {
            calls.spawn {
                // Until the batch is answered or its budget spent: no new call starts after that.
                while !done.hasFired && !Task.isCancelled {
                    let index = next.take()
                    guard index < questions.count else { return }
                    let question = questions[index]
                    let result = await model.analyse(lesson: question.lesson, questionId: question.questionId, answer: question.answer)
                    continuation.yield((index, result.analysis, result.analyzer))
                }
            }
        }
        let deadline = ContinuousClock.now + budget
        calls.spawn {
            // The budget, or the batch answered before it (the timer then ends at once).
            if await !done.wait(until: deadline) { continuation.yield(nil) }
        }
        var answers: [Int: (analysis: LearningAnalysis, analyzer: String)] = [:]
        for await item in stream {
            guard let (index, analysis, analyzer) = item else { break }
            answers[index] = (analysis, analyzer)
            if answers.count == questions.count { break }
        }
        done.fire()
        continuation.finish()
        // The calls still out finish in `calls` (each bounded by the adapter's timeout and
        // retries), unheard; no new one starts.
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
