@testable import AnalyticsAggregator
import Contracts
import Foundation
import ServiceLogging
import Testing

/// The model adapter against a local server that speaks the chat-completions protocol (Python's
/// standard library, on loopback): the first path segment picks how it answers — a good object,
/// one in a Markdown fence, a content that is not JSON, an object off the seed's schema, an
/// answer slower than the timeout, a 500 then a good answer, always 500.
@Suite("Model adapter (chat completions)", .serialized, .timeLimit(.minutes(2)))
struct ChatCompletionsAnalyserTests {
    static let server = #"""
        import json, sys, time, threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        counts = {}
        lock = threading.Lock()
        GOOD = {"masteryScore": 4, "understandingLevel": "whatever", "summary": "能说清间隔重复的安排。",
                "strengths": ["覆盖主要要点"], "weakPoints": [], "suggestions": ["举一个例子"], "reviewNeeded": False,
                "nextAction": "进入下一节。"}
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def answer(self, status, content):
                body = json.dumps({"id": "x", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).encode() \
                    if status == 200 else b'{"error":{"message":"boom"}}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                mode = self.path.strip("/").split("/")[0]
                with lock:
                    counts[mode] = counts.get(mode, 0) + 1
                    n = counts[mode]
                good = dict(GOOD, summary=GOOD["summary"] + " model=" + request["model"] + " auth=" + self.headers.get("Authorization", "-"))
                if mode == "good": self.answer(200, json.dumps(good))
                elif mode == "chat": self.answer(200, "间隔重复：在快要忘记时复习。 asked=" + request["messages"][-1]["content"])
                elif mode == "fenced": self.answer(200, "```json\n" + json.dumps(good) + "\n```")
                elif mode == "malformed": self.answer(200, "I think the learner did fine!")
                elif mode == "offschema": self.answer(200, json.dumps(dict(GOOD, masteryScore=9)))
                elif mode == "slow":
                    time.sleep(3)
                    self.answer(200, json.dumps(good))
                elif mode == "flaky": self.answer(500 if n == 1 else 200, json.dumps(good))
                else: self.answer(500, "")
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// Runs the server for `body`, with its base URL.
    static func withServer(_ body: (String) async throws -> Void) async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("chat-completions-\(UUID().uuidString).py")
        try server.write(to: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u", script.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        defer {
            // SIGKILL: a child of the test process inherits its blocked SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: script)
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let port = try #require(Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        try await body("http://127.0.0.1:\(port)")
    }

    static let lesson = LearningAnalyserTests.chinese
    static let answer = "间隔重复就是在快要忘记时复习，成功回忆后间隔变长。"

    func adapter(_ base: String, _ mode: String, timeout: Int = 1, retries: Int = 1) -> ChatCompletionsAnalyser {
        ChatCompletionsAnalyser(configuration: AIConfiguration(url: "\(base)/\(mode)/v1", apiKey: "sk-test", model: "test-model",
                                                               timeoutSeconds: timeout, retries: retries), logger: .disabled)
    }

    @Test("a good answer is the model's analysis, in the seed's shape, with the seed's level word for its score; the key and model are sent")
    func good() async throws {
        try await Self.withServer { base in
            for mode in ["good", "fenced"] {
                let result = await adapter(base, mode).analyse(lesson: Self.lesson, questionId: "q1", answer: Self.answer)
                #expect(result.analyzer == "test-model")
                #expect(result.analysis.masteryScore == 4)
                #expect(result.analysis.understandingLevel == "理解较好")
                #expect(result.analysis.summary.contains("model=test-model auth=Bearer sk-test"))
                try result.analysis.validate()
            }
        }
    }

    @Test("malformed, off-schema, failing and slow answers fall back to the built-in analyser within the retries' time; a 500 once is retried")
    func fallback() async throws {
        try await Self.withServer { base in
            let builtin = BuiltinLearningAnalyser().analyse(lesson: Self.lesson, questionId: "q1", answer: Self.answer)
            for mode in ["malformed", "offschema", "error", "slow"] {
                let started = ContinuousClock.now
                let result = await adapter(base, mode).analyse(lesson: Self.lesson, questionId: "q1", answer: Self.answer)
                let elapsed = ContinuousClock.now - started
                #expect(result.analyzer == BuiltinLearningAnalyser.name, "\(mode)")
                #expect(result.analysis == builtin, "\(mode)")
                // Two attempts of at most 1 s each and a 200 ms pause: never the 3 s the slow server takes, twice.
                #expect(elapsed < .seconds(3), "\(mode) took \(elapsed)")
            }
            let flaky = await adapter(base, "flaky").analyse(lesson: Self.lesson, questionId: "q1", answer: Self.answer)
            #expect(flaky.analyzer == "test-model")
            // Nothing listening: the transport fails fast and the built-in analyser answers.
            let closed = await ChatCompletionsAnalyser(configuration: AIConfiguration(url: "http://127.0.0.1:9/v1", timeoutSeconds: 1, retries: 0),
                                                       logger: .disabled).analyse(lesson: Self.lesson, questionId: nil, answer: Self.answer)
            #expect(closed.analyzer == BuiltinLearningAnalyser.name)
        }
    }

    @Test("chat sends the question with the lesson as context and returns the reply; an endpoint that fails gives none")
    func chat() async throws {
        try await Self.withServer { base in
            let reply = await adapter(base, "chat").chat(lesson: Self.lesson, message: "帮我解释这一节")
            #expect(reply?.contains("asked=帮我解释这一节") == true)
            #expect(await adapter(base, "error").chat(lesson: Self.lesson, message: "帮我解释这一节") == nil)
        }
    }

    @Test("the endpoint URL: a base gets /chat/completions, a full URL is kept")
    func endpoint() {
        #expect(AIConfiguration(url: "https://api.example.com/v1/").endpoint == "https://api.example.com/v1/chat/completions")
        #expect(AIConfiguration(url: "http://h/v1/chat/completions").endpoint == "http://h/v1/chat/completions")
    }
}
