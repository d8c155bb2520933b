import Crypto
import Foundation
import Logging
import SluiceCore
import SluiceStore
import SluiceText

/// Ingests `queues/text/*.jsonl`: one JSON object a line, `{"id", "userId", "text", "context"?, "kind"?}`.
/// Every line becomes an item (approved or blocked with the verdict, or rejected naming file and line); a
/// finished file moves to `queues/text/done/`. Replaying a file after a crash is a no-op for lines already
/// recorded (same id and same text), so no line is lost or counted twice.
public struct TextQueueProcessor: Sendable {
    static let kinds: Set<String> = ["message", "post", "comment"]
    static let batchSize = 500

    let root: DataRoot
    let store: StatusStore
    let filter: ProfanityFilter
    let priority: any PriorityEngine
    let logger: Logger

    public init(root: DataRoot, store: StatusStore, filter: ProfanityFilter, priority: any PriorityEngine, logger: Logger) {
        self.root = root
        self.store = store
        self.filter = filter
        self.priority = priority
        self.logger = logger
    }

    public var queue: URL { root.url.appendingPathComponent("queues/text", isDirectory: true) }
    public var done: URL { queue.appendingPathComponent("done", isDirectory: true) }

    /// Queue files ready to ingest (writers use a dotfile or `.part`/`.tmp` and rename).
    public func pendingFiles() -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: queue.path)) ?? []
        return names.filter { $0.hasSuffix(".jsonl") && !PendingScanner.isInProgress($0) }.sorted()
            .map { queue.appendingPathComponent($0) }
            .filter { PendingScanner.fileType($0) == .regular }
    }

    public struct FileSummary: Sendable, Equatable {
        public var lines = 0
        public var recorded = 0
        public var unchanged = 0
        public var rejected = 0
    }

    /// Processes every ready file; returns per-file summaries.
    @discardableResult
    public func processAll() async -> [String: FileSummary] {
        var summaries: [String: FileSummary] = [:]
        for file in pendingFiles() {
            do {
                summaries[file.lastPathComponent] = try await process(file)
            } catch {
                logger.error("text queue file not finished, will retry", metadata: ["file": "\(file.lastPathComponent)", "error": "\(error)"])
            }
        }
        return summaries
    }

    /// One file: judge each line, record in batches, then move the file to done/.
    public func process(_ file: URL) async throws -> FileSummary {
        let data = try Data(contentsOf: file, options: .mappedIfSafe)
        let name = file.lastPathComponent
        var summary = FileSummary()
        var batch: [(item: Item, hash: String)] = []

        func flush() throws {
            guard !batch.isEmpty else { return }
            let existing = try store.contentHashes(ids: batch.map(\.item.id))
            var seen = Set<String>()
            var fresh: [Item] = []
            // Within a batch the last line for an id wins, like sequential processing would.
            for entry in batch.reversed() where seen.insert(entry.item.id).inserted {
                if let old = existing[entry.item.id], old.hash == entry.hash {
                    summary.unchanged += 1
                } else {
                    fresh.append(entry.item)
                }
            }
            try store.recordVerdicts(fresh.reversed(), stage: "text")
            summary.recorded += fresh.count
            batch.removeAll(keepingCapacity: true)
        }

        var lineNumber = 0
        var lineStart = data.startIndex
        while lineStart < data.endIndex {
            let lineEnd = data[lineStart...].firstIndex(of: 0x0A) ?? data.endIndex
            var line = data[lineStart..<lineEnd]
            lineStart = lineEnd < data.endIndex ? data.index(after: lineEnd) : data.endIndex
            lineNumber += 1
            if line.last == 0x0D { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            summary.lines += 1
            var item = judge(line, source: "queues/text/\(name):\(lineNumber)", fallbackID: "\(name):\(lineNumber)")
            if item.status != .rejected, let content = item.content {
                item.priority = await priority.score(content.text, context: content.context)
            }
            if item.status == .rejected { summary.rejected += 1 }
            batch.append((item, item.contentHash ?? ""))
            if batch.count >= Self.batchSize { try flush() }
        }
        try flush()
        try FileOps.move(file, to: done.appendingPathComponent(name))
        logger.info("text queue file done", metadata: ["file": "\(name)", "lines": "\(summary.lines)", "recorded": "\(summary.recorded)",
                                                        "unchanged": "\(summary.unchanged)", "rejected": "\(summary.rejected)"])
        return summary
    }

    /// Turns one line into an item: a verdict, or a rejection naming the file and line.
    func judge(_ line: Data.SubSequence, source: String, fallbackID: String) -> Item {
        let now = Date()
        func rejected(_ id: String, userId: String, _ reason: String, text: String? = nil) -> Item {
            Item(id: id, kind: .text, userId: userId, status: .rejected, reason: "\(source): \(reason)",
                 contentHash: Self.hash(Data(line)), createdAt: now, updatedAt: now,
                 content: text.map { TextContent(text: $0, source: source) })
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
            let valid = String(validating: line, as: UTF8.self) != nil
            return rejected(fallbackID, userId: "", valid ? "not a JSON object" : "not valid UTF-8")
        }
        guard let rawID = object["id"] else { return rejected(fallbackID, userId: "", "missing field \"id\"") }
        guard let id = rawID as? String, Self.isValidTextID(id) else {
            return rejected(fallbackID, userId: "", "bad id \(Self.describe(rawID)): must match [A-Za-z0-9_.:-]{1,128}")
        }
        guard let rawUser = object["userId"] else { return rejected(id, userId: "", "missing field \"userId\"") }
        guard let userId = rawUser as? String, Identifiers.isValidSegment(userId) else {
            return rejected(id, userId: "", "bad userId \(Self.describe(rawUser)): must match [A-Za-z0-9_-]{1,128}")
        }
        guard let rawText = object["text"] else { return rejected(id, userId: userId, "missing field \"text\"") }
        guard let text = rawText as? String else { return rejected(id, userId: userId, "field \"text\" must be a string") }
        var context: String?
        if let rawContext = object["context"], !(rawContext is NSNull) {
            guard let value = rawContext as? String else { return rejected(id, userId: userId, "field \"context\" must be a string") }
            context = value
        }
        var kind: String?
        if let rawKind = object["kind"], !(rawKind is NSNull) {
            guard let value = rawKind as? String, Self.kinds.contains(value) else {
                return rejected(id, userId: userId, "field \"kind\" must be one of message, post, comment")
            }
            kind = value
        }
        let allowedKeys: Set<String> = ["id", "userId", "text", "context", "kind"]
        if let extra = object.keys.filter({ !allowedKeys.contains($0) }).sorted().first {
            return rejected(id, userId: userId, "unknown field \"\(extra)\"")
        }
        let content = TextContent(text: text, context: context, kind: kind, source: source)
        let hash = Self.hash(Data(text.utf8))
        do throws(TextInputError) {
            let verdict = try filter.check(text)
            return Item(id: id, kind: .text, userId: userId, status: verdict.allowed ? .approved : .blocked,
                        reason: verdict.allowed ? nil : verdict.reason, contentHash: hash, createdAt: now, updatedAt: now,
                        content: content, textVerdict: verdict)
        } catch {
            var item = rejected(id, userId: userId, error.message)
            item.contentHash = hash
            item.content = error.kind == .tooLong ? TextContent(text: String(text.prefix(200)) + "…", context: context, kind: kind, source: source) : content
            return item
        }
    }

    static func isValidTextID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2E || b == 0x3A || b == 0x2D
        }
    }

    static func hash(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    private static func describe(_ value: Any) -> String {
        if let string = value as? String {
            let shown = String(string.unicodeScalars.prefix(40).map { $0.value < 0x20 ? "?" : Character($0) })
            return "\"\(shown)\(string.unicodeScalars.count > 40 ? "…" : "")\""
        }
        if value is NSNull { return "null" }
        if value is NSNumber { return "(a number)" }
        return "(not a string)"
    }
}
