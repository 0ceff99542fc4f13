import Foundation
import Testing
import USD
@testable import RoomScan

/// The RoomPlan-shaped scans `Tests/USDTests/Fixtures/generate.py` writes with usd-core.
enum ScanFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("USDTests/Fixtures")

    static func package(_ name: String) -> String { directory.appendingPathComponent(name + ".usdz").path }

    static func roomPlanData(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name + ".roomplan.json"))
    }

    static func room(_ name: String) throws -> CapturedRoom { try CapturedRoom(json: roomPlanData(name)) }

    /// The fixture's CapturedRoom JSON with `edit` applied to its top-level object.
    static func edited(_ name: String, _ edit: (inout [String: Any]) -> Void) throws -> Data {
        var object = try JSONSerialization.jsonObject(with: roomPlanData(name)) as? [String: Any] ?? [:]
        edit(&object)
        return try JSONSerialization.data(withJSONObject: object)
    }
}

@Suite("CapturedRoom JSON")
struct CapturedRoomTests {
    @Test("a RoomPlan export's lists, categories, confidences and transforms are read; unknown keys ignored")
    func parsesFixture() throws {
        let room = try ScanFixtures.room("roomscan")
        #expect(room.walls.count == 4 && room.doors.count == 1 && room.windows.count == 1)
        #expect(room.openings.count == 1 && room.floors.count == 1 && room.objects.count == 12)
        #expect(room.version == 2 && room.story == 0 && room.sectionLabels == ["livingRoom"])
        #expect(room.doors[0].category == "door" && room.doors[0].isOpen == false)
        #expect(room.doors[0].parentIdentifier == room.walls[0].identifier)
        #expect(Set(room.objects.map(\.category)).isSuperset(of: ["table", "chair", "sofa", "bed", "storage"]))
        #expect(room.walls.allSatisfy { $0.confidence == .high })
        #expect(room.floors[0].polygonCorners.count == 4)
        #expect(abs(room.walls[0].center.z - -2.0) < 1e-9)
    }

    @Test("a malformed file fails with roomplan_malformed and a reason naming the place", arguments: [
        ("not json", "not valid JSON"),
        ("[1,2]", "not a JSON object"),
        ("{\"walls\":[],\"doors\":[],\"windows\":[]}", "no \"objects\" list"),
    ])
    func malformedText(text: String, reason: String) {
        #expect {
            try CapturedRoom(json: Data(text.utf8))
        } throws: { error in
            let error = error as? RoomScanError
            return error?.code == .roomPlanMalformed && error?.reason.contains(reason) == true
        }
    }

    @Test("a bad element names the list, the index and the field")
    func badElements() throws {
        let cases: [(String, (inout [String: Any]) -> Void)] = [
            ("walls[1].transform: expected 16 numbers, found 12", { object in
                var walls = object["walls"] as? [[String: Any]] ?? []
                walls[1]["transform"] = Array(repeating: 0.0, count: 12)
                object["walls"] = walls
            }),
            ("objects[0].identifier: \"nope\" is not a UUID", { object in
                var objects = object["objects"] as? [[String: Any]] ?? []
                objects[0]["identifier"] = "nope"
                object["objects"] = objects
            }),
            ("doors[0].confidence: \"great\" is not high, medium or low", { object in
                var doors = object["doors"] as? [[String: Any]] ?? []
                doors[0]["confidence"] = ["great": [String: Any]()]
                object["doors"] = doors
            }),
            ("windows[0].category: expected a one-key object", { object in
                var windows = object["windows"] as? [[String: Any]] ?? []
                windows[0]["category"] = ["window": [String: Any](), "door": [String: Any]()]
                object["windows"] = windows
            }),
        ]
        for (reason, edit) in cases {
            let data = try ScanFixtures.edited("roomscan", edit)
            do {
                _ = try CapturedRoom(json: data)
                Issue.record("accepted: \(reason)")
            } catch let error as RoomScanError {
                #expect(error.code == .roomPlanMalformed)
                #expect(error.reason.hasPrefix(reason), "\(error.reason)")
            }
        }
    }

    @Test("absurd element counts are refused before they are parsed")
    func absurdCounts() throws {
        let data = try ScanFixtures.edited("roomscan") { object in
            object["objects"] = Array(repeating: [String: Any](), count: CapturedRoom.maximumElements + 1)
        }
        #expect(throws: RoomScanError.self) { try CapturedRoom(json: data) }
        #expect((try? CapturedRoom(json: data)) == nil)
    }
}

@Suite("Layer classification")
struct LayerClassifierTests {
    @Test("every mesh of a RoomPlan scan lands in the layer its element names, counts agree with roomplan.json",
          arguments: ["roomscan", "roomscan_usdc", "roomscan_open"])
    func classifiesScan(name: String) throws {
        let stage = try USDStage(contentsOf: ScanFixtures.package(name))
        let room = try ScanFixtures.room(name)
        let layers = RoomLayers(stage: stage, room: room)
        #expect(layers.mismatches.isEmpty, "\(layers.mismatches)")
        let byName = Dictionary(uniqueKeysWithValues: layers.layers.map { ($0.layer.rawValue, $0) })
        #expect(byName["walls"]?.elementPaths.count == room.walls.count)
        #expect(byName["table"]?.meshPaths == [
            "/Room/Parametric_grp/Object_grp/Table_grp/Table0/Geom_grp/Table0_body",
            "/Room/Parametric_grp/Object_grp/Table_grp/Table0/Geom_grp/Table0_base",
        ])
        #expect(byName["table"]?.elementPaths == ["/Room/Parametric_grp/Object_grp/Table_grp/Table0"])
        #expect(byName["chair"]?.elementPaths.count == 3)
        #expect(byName["other"] == nil)
        #expect(layers.layers.map(\.layer) == layers.layers.map(\.layer).sorted())
        let meshes = stage.traverse().filter { $0.typeName == "Mesh" }.count
        #expect(layers.layers.reduce(0) { $0 + $1.meshPaths.count } == meshes)
    }

    @Test("customData.Category names the layer in iOS 17 exports; unnamed meshes go to other")
    func customDataAndOther() throws {
        let stage = try USDStage(contentsOf: ScanFixtures.directory.appendingPathComponent("roomplan.usdz").path)
        let room = try ScanFixtures.room("roomscan")
        let layers = RoomLayers(stage: stage, room: room)
        let names = layers.layers.map(\.layer)
        #expect(names.contains(.walls) && names.contains(.floors) && names.contains(RoomLayer(rawValue: "storage")))
        // This package has 3 walls and 1 storage, the JSON 4 walls and 2 storages: reported.
        #expect(layers.mismatches.contains(RoomLayers.CountMismatch(layer: .walls, inPackage: 3, inRoomPlan: 4)))
        #expect(RoomLayer.named("WasherDryer") == RoomLayer(rawValue: "washerDryer"))
        // Invisible and guide meshes are in no layer.
        let basic = try USDStage(contentsOf: ScanFixtures.directory.appendingPathComponent("basic_usda.usdz").path)
        let other = RoomLayers(stage: basic, room: room).layers.flatMap(\.meshPaths)
        #expect(other.contains("/World/Big") && !other.contains("/World/Hidden") && !other.contains("/World/Guide"))
        #expect(RoomLayer.named("Lamp") == nil)
    }
}

@Suite("Quality grade")
struct QualityGradeTests {
    @Test("a closed, confident, furnished, 6-minute scan is A; the same scan after 4 minutes is B, after 2 C")
    func durationDimension() throws {
        let room = try ScanFixtures.room("roomscan")
        #expect(QualityGrade(room: room, durationSeconds: 360).grade == .a)
        #expect(QualityGrade(room: room, durationSeconds: 900).grade == .a)
        #expect(QualityGrade(room: room, durationSeconds: 240).grade == .b)
        #expect(QualityGrade(room: room, durationSeconds: 120).grade == .c)
        let skipped = QualityGrade(room: room, durationSeconds: nil)
        #expect(skipped.grade == .a)
        let duration = try #require(skipped.dimensions.first { $0.name == "scanDuration" })
        #expect(duration.grade == nil && duration.note.contains("skipped"))
    }

    @Test("three walls that do not close, one of them low confidence, grade C on both dimensions")
    func openLoop() throws {
        let grade = QualityGrade(room: try ScanFixtures.room("roomscan_open"), durationSeconds: 400)
        #expect(grade.grade == .c)
        let byName = Dictionary(uniqueKeysWithValues: grade.dimensions.map { ($0.name, $0) })
        #expect(byName["wallLoopClosed"]?.grade == .c)
        #expect(byName["wallLoopClosed"]?.note.contains("2 wall ends") == true)
        #expect(byName["wallConfidence"]?.grade == .c)
        #expect(abs((byName["wallConfidence"]?.value ?? 0) - 1.0 / 3) < 1e-9)
        #expect(byName["objectCount"]?.grade == .a)
    }

    @Test("wall confidence and object count thresholds: 90 % / 70 %, 5 / 2 objects")
    func thresholds() throws {
        func room(walls: [String], objects: Int) throws -> CapturedRoom {
            try CapturedRoom(json: ScanFixtures.edited("roomscan") { object in
                let template = (object["walls"] as? [[String: Any]] ?? [])
                object["walls"] = walls.enumerated().map { index, confidence in
                    var wall = template[index % template.count]
                    wall["confidence"] = [confidence: [String: Any]()]
                    return wall
                }
                object["objects"] = Array((object["objects"] as? [[String: Any]] ?? []).prefix(objects))
            })
        }
        func dimension(_ grade: QualityGrade, _ name: String) -> QualityGrade.Grade? {
            grade.dimensions.first { $0.name == name }?.grade
        }
        let tenWalls = Array(repeating: "high", count: 9) + ["low"]
        #expect(dimension(QualityGrade(room: try room(walls: tenWalls, objects: 5), durationSeconds: nil), "wallConfidence") == .a)
        let eightOfTen = Array(repeating: "high", count: 8) + ["low", "medium"]
        #expect(dimension(QualityGrade(room: try room(walls: eightOfTen, objects: 4), durationSeconds: nil), "wallConfidence") == .b)
        let grade = QualityGrade(room: try room(walls: ["high", "high", "high", "medium"], objects: 1), durationSeconds: nil)
        #expect(dimension(grade, "wallConfidence") == .b)
        #expect(dimension(grade, "objectCount") == .c)
        #expect(dimension(QualityGrade(room: try room(walls: tenWalls, objects: 2), durationSeconds: nil), "objectCount") == .b)
        #expect(dimension(QualityGrade(room: try room(walls: tenWalls, objects: 5), durationSeconds: nil), "objectCount") == .a)
        #expect(QualityGrade(room: try room(walls: [], objects: 5), durationSeconds: nil).grade == .c)
    }
}
