import Contracts
import Foundation
import HTTPRouting

/// The small path `backbone dev` loads so that a new user of the learning app has something to
/// choose (seed `003_*` §四: "只做一个小路径"): five lessons on how to learn, each with key
/// concepts and a recall question, in Chinese with English terms. Written for this project.
public enum SampleLearningPath {
    public static let knowledgeBaseID = "kb-learning-how-to-learn"
    public static let pathID = "path-learning-5-days"

    public static let knowledgeBase = KnowledgeBase(
        id: knowledgeBaseID, version: 1, title: "学会学习 Learning how to learn",
        summary: "用认知科学里被反复验证的方法，把读过的东西真正记住。", language: "zh-Hans")

    public static let path = LearningPath(
        id: pathID, version: 1, knowledgeBaseId: knowledgeBaseID, title: "高效学习 5 天入门",
        summary: "每天一节，每节 10 分钟：读完后用主动回忆写下你记住的内容，系统给出分析和复习安排。", estimatedDays: 5,
        modules: [
            LearningModule(id: "module-remember", title: "记得住", lessonIds: ["lesson-active-recall", "lesson-spaced-repetition"]),
            LearningModule(id: "module-understand", title: "理解透",
                           lessonIds: ["lesson-feynman", "lesson-interleaving", "lesson-sleep"]),
        ])

    public static let lessons: [Lesson] = [
        Lesson(
            id: "lesson-active-recall", version: 1, knowledgeBaseId: knowledgeBaseID, title: "第 1 天：主动回忆 Active recall",
            body: """
                合上书，试着把刚读的内容说出来或写下来，这就是主动回忆（active recall）。它比重复阅读更有效：\
                每一次从记忆中提取信息，都会让这条记忆更牢固，这被称为测试效应（testing effect）。\
                重读会带来"我都懂了"的熟悉感，但熟悉不等于能想起来。回忆时想不起来的地方，正是下一次要重点看的地方。
                """,
            objectives: ["说出主动回忆和重读的区别", "理解为什么提取练习能加强记忆"],
            keyConcepts: ["主动回忆", "测试效应", "提取记忆"],
            recallQuestions: [RecallQuestion(id: "q1", question: "为什么合上书回忆比重读更有效？",
                                             expectedPoints: ["提取记忆会加强记忆", "重读只带来熟悉感", "想不起来的地方需要重点复习"])],
            practicePrompt: "合上书，用三句话写下你记住的内容。", analysisRules: AnalysisRules(minAnswerUnits: 30), estimatedMinutes: 10),
        Lesson(
            id: "lesson-spaced-repetition", version: 1, knowledgeBaseId: knowledgeBaseID, title: "第 2 天：间隔重复 Spaced repetition",
            body: """
                艾宾浩斯的遗忘曲线告诉我们：新学的内容在最初几天忘得最快。与其一次复习很多遍，\
                不如在快要忘记的时候复习：间隔一天、再间隔几天、再间隔几周，这就是间隔重复（spaced repetition）。\
                每次成功回忆后，下一次复习的间隔可以变长；回忆失败，就从短间隔重新开始。
                """,
            objectives: ["解释遗忘曲线", "说出间隔重复如何安排复习时间"],
            keyConcepts: ["遗忘曲线", "间隔重复", "复习间隔"],
            recallQuestions: [RecallQuestion(id: "q1", question: "间隔重复怎样安排复习？",
                                             expectedPoints: ["在快要忘记时复习", "成功回忆后间隔变长", "回忆失败就缩短间隔"])],
            practicePrompt: "为今天学的内容写一个复习时间表。", analysisRules: AnalysisRules(minAnswerUnits: 30), estimatedMinutes: 10),
        Lesson(
            id: "lesson-feynman", version: 1, knowledgeBaseId: knowledgeBaseID, title: "第 3 天：费曼技巧 The Feynman technique",
            body: """
                假装你要把一个概念讲给一个十二岁的孩子听：用简单的话，不用术语。讲不下去的地方，\
                就是你还没真正理解的地方；回到材料里补上，再讲一遍，直到能用简单的类比说清楚。
                """,
            objectives: ["用费曼技巧检查自己是否理解"],
            keyConcepts: ["费曼技巧", "简单的话", "理解漏洞"],
            recallQuestions: [RecallQuestion(id: "q1", question: "费曼技巧的步骤是什么？",
                                             expectedPoints: ["用简单的话讲给别人听", "找出讲不清楚的地方", "回到材料补上再讲一遍"])],
            practicePrompt: "用简单的话解释\"间隔重复\"。", estimatedMinutes: 10),
        Lesson(
            id: "lesson-interleaving", version: 1, knowledgeBaseId: knowledgeBaseID, title: "第 4 天：交错练习 Interleaving",
            body: """
                把不同类型的题目混在一起练习，而不是一类题连续做完，这叫交错练习（interleaving）。\
                它让练习变得更难，但迫使你每次先判断该用哪种方法，考试时的表现因此更好。
                """,
            objectives: ["区分分块练习和交错练习"],
            keyConcepts: ["交错练习", "分块练习", "选择方法"],
            recallQuestions: [RecallQuestion(id: "q1", question: "交错练习为什么有效？",
                                             expectedPoints: ["混合不同类型的题目", "迫使你先判断用哪种方法", "练习更难但效果更好"])],
            estimatedMinutes: 10),
        Lesson(
            id: "lesson-sleep", version: 1, knowledgeBaseId: knowledgeBaseID, title: "第 5 天：睡眠与记忆巩固 Sleep",
            body: """
                白天学到的内容在睡眠中被重新激活和整理，这叫记忆巩固（consolidation）。\
                熬夜突击会牺牲睡眠，反而让记住的东西更少。学习后的一晚好觉，是复习计划的一部分。
                """,
            objectives: ["说明睡眠对记忆的作用"],
            keyConcepts: ["记忆巩固", "睡眠", "熬夜突击"],
            recallQuestions: [RecallQuestion(id: "q1", question: "为什么熬夜突击效果不好？",
                                             expectedPoints: ["睡眠中记忆被巩固", "熬夜牺牲睡眠", "记住的东西更少"])],
            estimatedMinutes: 10),
    ]

    /// Writes the sample through the write edge's own routes (`PUT /knowledge-bases|paths|lessons/{id}`)
    /// with a service token; returns the statuses that were not 202.
    public static func load(into ingest: Router, serviceToken: String) async throws -> [String] {
        var failures: [String] = []
        func put(_ path: String, _ value: some Encodable) async throws {
            let response = await ingest.respond(to: HTTPRequest(
                method: .put, path: path, headers: ["Authorization": "Bearer \(serviceToken)", "Content-Type": "application/json"],
                body: try ContractCoding.encode(value)))
            if response.status != .accepted { failures.append("\(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))") }
        }
        try await put("/knowledge-bases/\(knowledgeBaseID)", knowledgeBase)
        try await put("/paths/\(pathID)", path)
        for lesson in lessons { try await put("/lessons/\(lesson.id)", lesson) }
        return failures
    }
}
