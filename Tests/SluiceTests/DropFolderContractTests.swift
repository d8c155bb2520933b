import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Names and file types under pending/: bad ones are never opened, always recorded with a reason.
@Suite(.serialized) struct DropFolderContractTests {
    @Test func badNamesLinksAndFoldersAreRejectedWithoutDecoding() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let photo = TestEnvironment.fixture("images/photos/rocket.jpg")
        try root.drop(photo, user: "u1", name: "has space.jpg")
        try root.drop(photo, user: "u1", name: "ünïcode.jpg")
        try root.drop(photo, user: "u1", name: "a..b.jpg")
        try root.drop(photo, user: "u1", name: "x.j%g")
        try root.drop(photo, user: "bad user", name: "fine.jpg")
        try root.drop(photo, user: "u1", name: String(repeating: "a", count: 129) + ".jpg")
        try FileManager.default.createDirectory(at: root.pending.appendingPathComponent("u1/folder-image"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.pending.appendingPathComponent("u1/link").path, withDestinationPath: photo.path)
        try FileManager.default.createSymbolicLink(atPath: root.pending.appendingPathComponent("linkuser").path,
                                                   withDestinationPath: photo.deletingLastPathComponent().path)
        try Data("x".utf8).writeClosingOnExec(to: root.pending.appendingPathComponent("loose.jpg"))
        // A user who happens to be called _pending, with a file of the same name: neither original replaces the other.
        try root.drop(Data("y".utf8), user: "_pending", name: "loose.jpg")

        let store = try await runOnce(root, server: server)
        #expect(server.received.isEmpty, "nothing with a bad name reaches the provider")
        let rejected = try await store.items(status: .rejected)
        let reasons = Dictionary(uniqueKeysWithValues: rejected.map { ($0.id.rawValue, $0.reason ?? "") })
        #expect(reasons["u1/has space.jpg"]?.contains("outside [A-Za-z0-9_-]") == true)
        #expect(reasons["u1/ünïcode.jpg"]?.contains("outside [A-Za-z0-9_-]") == true)
        #expect(reasons["u1/a..b.jpg"]?.contains("imageId \"a..b\"") == true, "\(reasons)")
        #expect(reasons["u1/x.j%g"]?.contains("extension") == true)
        #expect(reasons["bad user/fine.jpg"]?.contains("user folder \"bad user\"") == true)
        #expect(reasons["u1/" + String(repeating: "a", count: 129) + ".jpg"]?.contains("over the 128 limit") == true)
        #expect(reasons["u1/folder-image"]?.contains("folder where an image file belongs") == true)
        #expect(reasons["u1/link"]?.contains("symbolic link") == true)
        #expect(reasons["@pending/linkuser"]?.contains("symbolic link") == true)
        #expect(reasons["@pending/loose.jpg"]?.contains("not inside a user folder") == true)
        #expect(reasons["_pending/loose"]?.isEmpty == false)
        #expect(rejected.count == 11)
        // Everything left pending/ for rejected/, and the link's target was not touched.
        #expect(FileManager.default.fileExists(atPath: photo.path))
        let leftovers = root.allFiles().filter { $0.hasPrefix("pending/") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        for item in rejected { #expect(item.original.map { $0.hasPrefix("rejected/") } == true) }
        // A safe name keeps it (a file put straight into pending/); an unsafe one is replaced.
        #expect(root.exists("rejected/@pending/loose.jpg") && root.exists("rejected/_pending/loose.jpg"))
        #expect(try read(root.file("rejected/@pending/loose.jpg")) == Data("x".utf8) && (try read(root.file("rejected/_pending/loose.jpg"))) == Data("y".utf8))
        #expect(rejected.first { $0.id.rawValue == "u1/has space.jpg" }?.original?.hasPrefix("rejected/u1/invalid-") == true)
        #expect(root.allFiles().filter { $0.hasPrefix("approved/") }.isEmpty)
    }

    /// Two files of one upload id (`dup.png` and `dup.jpg`, one item `alice/dup`): judged one after the other in the
    /// same run, like a re-upload; neither is left in pending/ with a claim "taken over" by itself.
    @Test func twoFilesOfOneUploadIdAreJudgedInTurn() async throws {
        let root = try TemporaryDataRoot()
        // The second call answers late, so were both files judged at once the first would end (and release the item's
        // claim) while the second waits.
        let server = try await FakeVisionServer.start { _, index in
            index == 0 ? .safeSearch(cleanResult) : .delayed(seconds: 0.5, then: .safeSearch(cleanResult))
        }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "alice", name: "dup.png")
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "alice", name: "dup.jpg")
        let store = try await runOnce(root, server: server)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.pending.appendingPathComponent("alice").path).isEmpty)
        #expect(server.received.count == 2)
        let item = try #require(try await store.item("alice/dup"))
        #expect(item.status == .approved)
        #expect(try await store.events(of: "alice/dup").filter { $0.type == "verdict" }.count == 2, "both files were judged")
    }

    @Test func filesStillBeingWrittenAreLeftAlone() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let photo = TestEnvironment.fixture("images/photos/rocket.jpg")
        try root.drop(try read(photo), user: "u", name: ".hidden.jpg")
        try root.drop(try read(photo), user: "u", name: "upload.jpg.part")
        try root.drop(try read(photo), user: "u", name: "upload.tmp")
        try root.drop(try read(photo), user: "u", name: "q.PART")
        try root.drop(try read(photo), user: "u", name: "r.Tmp")
        let store = try await runOnce(root, server: server)
        #expect(try await store.items().isEmpty)
        #expect(root.exists("pending/u/.hidden.jpg") && root.exists("pending/u/upload.jpg.part") && root.exists("pending/u/upload.tmp"))
        #expect(root.exists("pending/u/q.PART") && root.exists("pending/u/r.Tmp"), "in-progress names are matched in any case")
    }

    @Test func notAnImageAndUntrustedFormatsAreRejected() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.drop(Data("just text\n".utf8), user: "u", name: "text.jpg")
        try root.drop(Data(), user: "u", name: "empty.png")
        try root.drop(Data("%PDF-1.4\n1 0 obj\n".utf8), user: "u", name: "doc.jpg")
        try root.drop(Data("<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8), user: "u", name: "vector.png")
        try root.drop(try read(TestEnvironment.fixture("images/photos/rocket.jpg")).prefix(5000), user: "u", name: "cut.jpg")
        let store = try await runOnce(root, server: server)
        #expect(try await store.item("u/text")?.reason?.contains("not an image") == true)
        #expect(try await store.item("u/empty")?.reason == "file is empty")
        #expect(try await store.item("u/doc")?.reason?.contains("PDF files are not accepted") == true)
        #expect(try await store.item("u/vector")?.reason?.contains("SVG") == true)
        let cut = try #require(try await store.item("u/cut"))
        #expect(cut.status == .rejected)
        #expect(cut.reason?.contains("truncated") == true, "\(cut.reason ?? "")")
        #expect(root.exists("rejected/u/cut.jpg"))
        #expect(server.received.isEmpty)
    }
}
