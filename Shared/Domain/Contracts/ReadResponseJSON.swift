import Foundation
import JSON

// The bodies of the read endpoints the app calls most, written with `JSONWriter`: byte for
// byte what `ContractCoding.encode(self)` writes (keys sorted, nil members left out), pinned
// by `ReadResponseJSONTests`.

extension ReadingProgressResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 384)
        w.beginObject()
        if let completedAt { w.key("completedAt"); w.timestamp(completedAt) }
        if let firstReadAt { w.key("firstReadAt"); w.timestamp(firstReadAt) }
        w.string("knowledgeBaseId", knowledgeBaseId)
        if let lastPosition { w.key("lastPosition"); lastPosition.write(to: &w) }
        if let lastReadAt { w.key("lastReadAt"); w.timestamp(lastReadAt) }
        w.string("lastSessionId", lastSessionId)
        w.key("materialId"); w.string(materialId)
        w.key("progressPercent"); w.double(progressPercent)
        w.string("readingTargetType", readingTargetType?.rawValue)
        w.key("status"); w.string(status.rawValue)
        w.key("totalActiveSeconds"); w.int(totalActiveSeconds)
        w.endObject()
        return w.bytes
    }
}

extension ContinueLearningResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.string("knowledgeBaseId", knowledgeBaseId)
        if let lastPosition { w.key("lastPosition"); lastPosition.write(to: &w) }
        if let lastReadAt { w.key("lastReadAt"); w.timestamp(lastReadAt) }
        w.string("materialId", materialId)
        if let progressPercent { w.key("progressPercent"); w.double(progressPercent) }
        w.string("readingTargetType", readingTargetType?.rawValue)
        w.key("type"); w.string(type.rawValue)
        w.endObject()
        return w.bytes
    }
}

extension LearningTrendResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 16 + points.count * 48)
        w.beginObject()
        w.key("points")
        w.beginArray()
        for point in points {
            w.beginObject()
            w.key("activeSeconds"); w.int(point.activeSeconds)
            w.key("day"); w.string(point.day)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

extension ActivityHeatmapResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 16 + days.count * 56)
        w.beginObject()
        w.key("days")
        w.beginArray()
        for day in days {
            w.beginObject()
            w.key("activeSeconds"); w.int(day.activeSeconds)
            w.key("day"); w.string(day.day)
            w.key("level"); w.int(day.level)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

extension LearningSummaryResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("currentStreakDays"); w.int(currentStreakDays)
        w.string("lastActiveDay", lastActiveDay)
        w.key("longestStreakDays"); w.int(longestStreakDays)
        w.key("materialsCompleted"); w.int(materialsCompleted)
        w.key("materialsReadToday"); w.int(materialsReadToday)
        w.key("today"); w.string(today)
        w.key("todayActiveSeconds"); w.int(todayActiveSeconds)
        w.key("weekActiveSeconds"); w.int(weekActiveSeconds)
        w.endObject()
        return w.bytes
    }
}

extension LearningHistoryResponse {
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 32 + sessions.count * 192)
        w.beginObject()
        w.string("nextCursor", nextCursor)
        w.key("sessions")
        w.beginArray()
        for session in sessions {
            w.beginObject()
            w.key("activeSeconds"); w.int(session.activeSeconds)
            w.key("clientSessionId"); w.string(session.clientSessionId)
            w.key("completed"); w.bool(session.completed)
            w.key("endedAt"); w.timestamp(session.endedAt)
            w.key("materialId"); w.string(session.materialId)
            w.key("startedAt"); w.timestamp(session.startedAt)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
