import Foundation
import Logging
import SluiceCore
import SluicePipeline

/// Ingests `queues/text/*.jsonl`: one JSON object a line, `{"id", "userId", "text", "context"?, "kind"?}`.
/// Every line runs through the text pipeline and becomes an item (approved or blocked with the verdict, or
/// rejected naming file and line); a finished file moves to `queues/text/done/`. Replaying a file after a crash
/// is a no-op for lines already recorded (same id and same text), so no line is lost or counted twice.
public struct TextQueueIngestor: Sendable {
    static let batchSize = 2_000
    /// Batches queued for the writer while the next is judged.
    static let writesAhead = 2

    let root: DataRoot
    let store: any StatusStore
    let pipeline: TextPipeline
    let logger: Logger
    /// Entries of the queue folder that are not read, each named in the log once (a scan runs on every change).
    private let ignored = SharedNames()

    public init(root: DataRoot, store: any StatusStore, pipeline: TextPipeline, logger: Logger) {
        self.root = root
        self.store = store
        self.pipeline = pipeline
        self.logger = logger
    }

    public var queue: URL { root.textQueue }
    public var done: URL { root.finishedTextQueue }

    /// Queue files ready to ingest (writers use a dotfile or `.part`/`.tmp` and rename). Anything else in the folder
    /// — a link, a folder, a name not ending in `.jsonl` — is left alone and named in the log once, so a file that
    /// will never be read does not sit there unnoticed.
    public func pendingFiles() -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: queue.path)) ?? []
        var ready: [URL] = []
        for name in names.sorted() where name != "done" && !PendingUpload.isInProgress(name) {
            let file = queue.appendingPathComponent(name)
            let type = FileType(at: file)
            let why: String? = if type == .symlink { "it is a symbolic link (links are never followed)" }
                else if type == .directory { "it is a folder (queue files are read from queues/text/ itself)" }
                else if !name.hasSuffix(".jsonl") { "its name does not end in .jsonl" }
                else if type != .regular { "it is not a regular file" }
                else { nil }
            if let why {
                if ignored.insert(name) {
                    logger.warning("text queue entry ignored", metadata: ["file": "\(name)", "reason": "\(why)"])
                }
                continue
            }
            // Appended to in place and still open: left for the scan its writer's close brings (not claimed meanwhile).
            if FileOps.isRecentlyWrittenAndOpen(file) { continue }
            ready.append(file)
        }
        return ready
    }

    public struct FileSummary: Sendable, Equatable {
        public var lines = 0
        public var recorded = 0
        public var unchanged = 0
        public var rejected = 0
        /// Lines followed by a later line for the same id in the same batch, which is the one recorded.
        public var superseded = 0
        /// Lines of users erased after the file was read (`DELETE /v1/users/{id}`, `sluice erase-user`): not recorded.
        public var erased = 0
    }

    /// Processes every ready file; returns per-file summaries. With `leases`, a file another daemon holds is left
    /// to it (and one whose holder died is taken over once its lease expires).
    @discardableResult
    public func processAll(leases: WorkLeases? = nil) async -> [String: FileSummary] {
        var summaries: [String: FileSummary] = [:]
        for file in pendingFiles() {
            let unit = Self.unit(of: file.lastPathComponent)
            if let leases, !(await leases.claim(unit)) { continue }
            do {
                // Another daemon may have finished and moved it between the listing and the claim. A file another
                // process still has open for writing (appended in place rather than renamed in) waits until it is
                // closed: read now, its later lines would move to done/ unread.
                if FileOps.isBeingWritten(file) {
                    logger.info("text queue file still open for writing; read once it is closed", metadata: ["file": "\(file.lastPathComponent)"])
                } else if FileType(at: file) == .regular {
                    summaries[file.lastPathComponent] = try await process(file, leases: leases)
                }
            } catch let lost as ClaimLost {
                logger.warning("\(lost)", metadata: ["file": "\(file.lastPathComponent)"])
                continue
            } catch {
                logger.error("text queue file not finished, will retry", metadata: ["file": "\(file.lastPathComponent)", "error": "\(error)"])
            }
            await leases?.release(unit)
        }
        return summaries
    }

    /// Lines run through the intake pipeline, not yet made items: each line's run and the id it is recorded under
    /// when it has none of its own, in line order. Kept as the two arrays they are made as: pairing them copied every
    /// run (each copy retains every string of a line's verdicts).
    struct JudgedWindow: Sendable {
        var fallbackIDs: [ItemID]
        var runs: [PipelineRun<Prioritised>]
        var count: Int { runs.count }
    }

    /// Runs the lines through the intake pipeline: one after another, or `text.classifierMaxInFlight` at a time when a
    /// classifier is called; the runs come back in line order.
    func judge(_ lines: [(line: Data, number: Int)], file name: String, ids: LineIDs, mayBeReplay: Bool = false,
               erasuresSeenUpTo: Int64? = nil) async -> JudgedWindow {
        let sourcePrefix = "queues/text/\(name):"
        let inputs = lines.map {
            QueueLine(bytes: $0.line, source: sourcePrefix + String($0.number), fallbackID: ids.id(line: $0.number), mayBeReplay: mayBeReplay,
                      erasuresSeenUpTo: erasuresSeenUpTo)
        }
        // One at a time without a classifier: the conversation rules count lines in file order.
        let runs = await pipeline.intake.run(inputs, context: .intake, concurrency: pipeline.concurrentLines)
        return JudgedWindow(fallbackIDs: inputs.map(\.fallbackID), runs: runs)
    }

    /// A batch's items in line order, and how many of them are rejected lines and how many were superseded: within a
    /// batch the last line for an id is the one recorded (recording the earlier ones too would make a replay after a
    /// crash record them again, since "unchanged" compares a line with what is stored). Made by the batch's preparation
    /// task once the batch before it is made, beside the judging of the next batch and the writing of the one before.
    /// The batch is the judged windows it was made of, in line order (kept whole, so no line is copied on the way).
    static func items(_ batch: [JudgedWindow]) -> (items: [Item], lineIDs: [ItemID], rejected: Int, superseded: Int) {
        // Made in line order, so times stamped as they are made rise with the line (threads without `sentAt` are
        // ordered by `createdAt`; listings by `updatedAt`).
        let count = batch.reduce(0) { $0 + $1.count }
        var made: [Item] = []
        var lines: [ItemID] = []
        made.reserveCapacity(count)
        lines.reserveCapacity(count)
        // The first user of each id in the batch: a later line of another user with that id is rejected under its
        // own line id (the store does the same against stored messages). The last line of each id is recorded.
        var owners: [ItemID: (user: String, last: Int)] = [:]
        owners.reserveCapacity(count)
        var rejected = 0
        // Lines are read in place (by index), not copied out of their windows.
        for window in batch {
            for index in window.runs.indices {
                let lineID = window.fallbackIDs[index]
                let now = Date()
                let base = Item(id: lineID, kind: .text, userId: "", status: .pending, createdAt: now, updatedAt: now)
                guard var item = window.runs[index].item(from: base, scope: .upload) else { continue }
                var owner = owners[item.id]
                if let first = owner, !first.user.isEmpty, first.user != item.userId {
                    item = item.refusedAsAnotherUsersID(lineID: lineID)
                    owner = owners[item.id]
                }
                if item.status == .rejected { rejected += 1 }
                // A line rejected without a user id ("") claims no id.
                let user = owner.map { $0.user.isEmpty ? item.userId : $0.user } ?? item.userId
                owners[item.id] = (user, made.count)
                made.append(item)
                lines.append(lineID)
            }
        }
        guard owners.count < made.count else { return (made, lines, rejected, 0) }
        var items: [Item] = []
        var lineIDs: [ItemID] = []
        items.reserveCapacity(owners.count)
        lineIDs.reserveCapacity(owners.count)
        for index in made.indices where owners[made[index].id]?.last == index {
            items.append(made[index])
            lineIDs.append(lines[index])
        }
        return (items, lineIDs, rejected, made.count - items.count)
    }

    /// The ids lines of one file are recorded under when they have no usable id of their own (rejected before one was
    /// read, or refused as another user's id): `{file}:{line}:{fingerprint}`, the fingerprint being the first four
    /// bytes of the file's SHA-256 in hex when it was first read. Writers reuse file names (`chat.jsonl` every hour), so
    /// the name and line alone would give the next file's rejected line 4 the id of this one's and overwrite its item;
    /// the same file read again (a replay after a crash, or a finished file dropped again) has the same fingerprint, so
    /// its lines are found unchanged — a replayed file keeps the one written down when it was first read
    /// (`QueueFileFingerprints`) even after an erasure blanked some of its lines. Characters of the name outside the id
    /// alphabet become `_` and a long name is cut short (the fingerprint keeps the ids apart), so every id is a valid
    /// text id of at most 128 bytes that the API can look up.
    struct LineIDs: Sendable {
        let stem: String
        let fingerprint: String

        /// `fingerprint`: the file's (`QueueFileFingerprints`), the first four bytes of its SHA-256 when first read.
        init(file name: String, fingerprint: String) {
            stem = String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "_.-".unicodeScalars.contains(scalar))
                    ? scalar : "_"
            }))
            self.fingerprint = fingerprint
        }

        func id(line: Int) -> ItemID {
            let tail = ":\(line):\(fingerprint)"
            // The stem is ASCII: characters are bytes.
            return ItemID(String(stem.prefix(max(1, 128 - tail.utf8.count))) + tail)
        }
    }

    /// A queue file's unit of work in the daemon's claims.
    static func unit(of name: String) -> String { "text:\(name)" }

    /// Another daemon took the file over while this one worked on it (its claim expired).
    struct ClaimLost: Error, CustomStringConvertible {
        var description: String { "another daemon took this text queue file over (this one's claim expired); leaving it to that one" }
    }

    /// One file: judge each line, record in batches, then move the file to done/. With `leases` (the daemon's), each
    /// batch commits only in a transaction that claims the file again (`text:{name}`), and the file moves only while
    /// this daemon still holds it: otherwise it stops here (`ClaimLost`).
    public func process(_ file: URL, leases: WorkLeases? = nil) async throws -> FileSummary {
        // The relation history's point before the file is read: a user erased after it may have lines here that were
        // read before the erasure blanked them (`Erasure.eraseUser`), so their lines are left out when written.
        let erasuresSeenUpTo = try await store.relationChanges(after: nil, limit: 0).last
        // Read through one descriptor, so the identity is that of the bytes read (a writer may rename a new file in).
        let (data, identity) = try FileOps.readRegularFileAndIdentity(file, limit: .max)
        let name = file.lastPathComponent
        let fingerprints = QueueFileFingerprints(root: root)
        let (fingerprint, resumed) = try fingerprints.fingerprint(of: name, contents: data, identity: identity)
        if resumed {
            logger.info("text queue file read before; its lines keep the ids they were first recorded under",
                        metadata: ["file": "\(name)", "fingerprint": "\(fingerprint)"])
        }
        let ids = LineIDs(file: name, fingerprint: fingerprint)
        var run = FileRun(ingestor: self, name: name, ids: ids, leases: leases, erasuresSeenUpTo: erasuresSeenUpTo)
        run.mayBeReplay = try await Self.wasReadBefore(data, ids: ids, store: store)
        var lineNumber = 0
        var offset = 0
        do {
            while offset < data.count {
                let (lines, next, counted) = Self.lines(of: data, from: offset, numbered: lineNumber)
                (offset, lineNumber) = (next, counted)
                for (range, number) in lines {
                    run.summary.lines += 1
                    run.pending.append((data[range], number))
                    if run.pending.count >= run.window { try await run.judgePending() }
                }
            }
            try await run.judgePending()
            try await run.flush()
            try await run.awaitWrites()
        } catch {
            // The writes already queued end before the error leaves (and the caller releases the file's claim), so
            // none commits after another daemon may have taken the file over.
            await run.settleWrites()
            throw error
        }
        let summary = run.summary
        if let leases, !(await leases.stillHolds(run.unit)) { throw ClaimLost() }
        try FileOps.moveKeepingExisting(file, to: { doneDestination(for: name, copy: $0) })
        do {
            try fingerprints.forget(name)
        } catch {
            logger.warning("a finished text queue file's fingerprint record stays (it matches no new file)",
                           metadata: ["file": "\(name)", "error": "\(error)"])
        }
        logger.info("text queue file done", metadata: ["file": "\(name)", "lines": "\(summary.lines)", "recorded": "\(summary.recorded)",
                                                        "unchanged": "\(summary.unchanged)", "rejected": "\(summary.rejected)",
                                                        "superseded": "\(summary.superseded)", "erased": "\(summary.erased)"])
        return summary
    }

    /// When the daemon stops: writes what the conversation rules hold unwritten (texts sent once), so a daemon that
    /// starts next counts them. A store that cannot take them is logged; they are lost as with `kill -9`.
    public func finish() async {
        do {
            try await pipeline.settle(final: true)
        } catch {
            logger.warning("the conversation rules' held counts could not be written", metadata: ["error": "\(error)"])
        }
    }

    /// Whether this file was read before — a replay after a crash, or a finished file dropped again: some of its first
    /// lines' ids are already stored. Then the conversation rules look each message up before counting it, so a
    /// replay does not count a sender's messages twice (which held ordinary messages for review as a flood); a file
    /// read for the first time costs one lookup. (Lines counted but not recorded when a daemon was killed are not
    /// found by the lookup and are counted again; README says how many.)
    static func wasReadBefore(_ data: Data, ids lineIDs: LineIDs, store: any StatusStore) async throws -> Bool {
        let first = lines(of: data, from: 0, numbered: 0).lines.prefix(16)
        guard !first.isEmpty else { return false }
        // Each line's id as the parse stage gives it: its own when it is a valid text id, otherwise (no id, a bad
        // one, a line that is not JSON) the line id it is recorded under.
        let ids = first.map { line -> ItemID in
            guard case let .success(object) = JSONLine.object(data.subdata(in: line.range)), let id = object["id"] as? String,
                  Identifiers.isValidTextID(id) else { return lineIDs.id(line: line.number) }
            return ItemID(id)
        }
        return !(try await store.contentHashes(ids)).isEmpty
    }

    /// Where a finished file goes in done/: its own name, or, when an earlier file of that name is there (a writer
    /// reusing names), `{name without .jsonl}.2.jsonl`, `.3`, … so no finished file is replaced (`copy` is 1 for the
    /// name itself; the move takes the first that is free, atomically).
    func doneDestination(for name: String, copy: Int) -> URL {
        guard copy > 1 else { return done.appendingPathComponent(name) }
        let stem = name.hasSuffix(".jsonl") ? String(name.dropLast(6)) : name
        return done.appendingPathComponent("\(stem).\(copy).jsonl")
    }

    /// The next lines of `data` from byte `offset` (up to 4,096 of them): each line that is not blank (spaces and tabs
    /// only), without its `\n` or `\r\n`, as byte offsets into `data` with its 1-based line number; where the next
    /// call starts, and how many lines (blank ones too) the file has up to there. The bytes are read through one
    /// pointer: indexing `Data` byte by byte checks exclusive access to its storage on every byte (~3% of the
    /// daemon's text path).
    static func lines(of data: Data, from offset: Int, numbered before: Int)
        -> (lines: [(range: Range<Int>, number: Int)], next: Int, counted: Int) {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var lines: [(range: Range<Int>, number: Int)] = []
            lines.reserveCapacity(4_096)
            var number = before
            var start = offset
            while start < bytes.count, lines.count < 4_096 {
                var end = start
                while end < bytes.count, bytes[end] != 0x0A { end += 1 }
                number += 1
                var last = end
                if last > start, bytes[last - 1] == 0x0D { last -= 1 }
                var blank = true
                for index in start..<last where bytes[index] != 0x20 && bytes[index] != 0x09 {
                    blank = false
                    break
                }
                if !blank { lines.append((start..<last, number)) }
                start = end + 1
            }
            return (lines, min(start, bytes.count), number)
        }
    }

    /// One file's state while it is ingested: lines waiting to be judged, pipeline runs waiting to be written, and the
    /// writes in flight. Batches are written while the next ones are judged (the store's writer and the pipeline each keep a
    /// core busy): up to `writesAhead` writes are queued, each waiting for the one before it, so batches land in file
    /// order and the judging never waits for a write unless the writer is the slower of the two. Each batch is made
    /// ready for the store (its items, the store's encoding of their rows) while the batch before it is written, so the
    /// writer's connection does only the database's part. Which lines are unchanged (same id, same text: a replay after
    /// a crash) is decided inside the write's own transaction.
    struct FileRun {
        let ingestor: TextQueueIngestor
        let name: String
        /// The ids of lines without one of their own.
        let ids: LineIDs
        /// The daemon's claims (nil: record without checking one).
        let leases: WorkLeases?
        /// The relation history's point read before the file was (`PreparedVerdicts.erasuresSeenUpTo`).
        let erasuresSeenUpTo: Int64
        var summary = FileSummary()
        var pending: [(line: Data, number: Int)] = []
        /// Judged windows waiting to be written.
        var batch: [JudgedWindow] = []
        var writes: [Task<(recorded: RecordedVerdicts, of: Int, rejected: Int, superseded: Int), any Error>] = []
        /// The file's unit of work in the daemon's claims.
        var unit: String { TextQueueIngestor.unit(of: name) }
        /// Some of its lines are already stored (`wasReadBefore`).
        var mayBeReplay = false
        /// The last batch made ready for the store; the next is made after it, so stamps rise with the line.
        var lastPreparation: Task<Prepared, Never>?

        /// A batch ready for the store, with its counts.
        struct Prepared: Sendable {
            var verdicts: PreparedVerdicts
            var rejected: Int
            var superseded: Int
        }

        /// Lines handed to the judging at a time (250, so eight windows make a batch of 2,000;
        /// `text.classifierMaxInFlight` when more): judged one at a time, or that many at once when a text
        /// classifier is called (its latency, not Sluice, sets the pace); either way they are recorded in file order.
        var window: Int { max(250, ingestor.pipeline.concurrentLines) }

        mutating func judgePending() async throws {
            let judged = await ingestor.judge(pending, file: name, ids: ids, mayBeReplay: mayBeReplay, erasuresSeenUpTo: erasuresSeenUpTo)
            pending.removeAll(keepingCapacity: true)
            // Whole windows: a batch is written once it holds `batchSize` lines or more (eight windows of 250, or
            // whole windows of `text.classifierMaxInFlight` lines when that is more).
            batch.append(judged)
            if batch.reduce(0, { $0 + $1.count }) >= TextQueueIngestor.batchSize { try await flush() }
        }

        mutating func flush() async throws {
            guard !batch.isEmpty else { return }
            let judged = batch
            batch.removeAll(keepingCapacity: true)
            if writes.count >= TextQueueIngestor.writesAhead { try await awaitOldestWrite() }
            let (store, leases, unit, pipeline, point) = (ingestor.store, leases, unit, ingestor.pipeline, erasuresSeenUpTo)
            // Made ready (items stamped in file order, rows encoded by the store) while the writer is busy with the
            // batch before: only the write itself waits for the writer.
            let previousPreparation = lastPreparation
            let preparation = Task { () -> Prepared in
                if let previousPreparation { _ = await previousPreparation.value }
                let (items, lineIDs, rejected, superseded) = TextQueueIngestor.items(judged)
                var verdicts = store.prepareChangedVerdicts(items, lineIDs: lineIDs, stage: "text")
                verdicts.erasuresSeenUpTo = point
                return Prepared(verdicts: verdicts, rejected: rejected, superseded: superseded)
            }
            lastPreparation = preparation
            let previous = writes.last
            // Ahead of the judging on the pool's threads: a write resumes as soon as the one before it commits, so the
            // store's writer is never left waiting for a thread the judging keeps busy (it waited ~15 ms a batch).
            writes.append(Task(priority: .high) {
                // In file order; the claim is made in the batch's own transaction, so it holds when the batch commits.
                if let previous { _ = try await previous.value }
                // The rules' counts first (a crash before the verdicts are recorded replays the lines, and a message
                // request is keyed by its item, so it is counted once). Written here, when the batch before has
                // committed, the judging does not wait for them (it waited for the writer at every batch).
                try await pipeline.settle()
                let prepared = await preparation.value
                let recorded: RecordedVerdicts
                if let leases {
                    guard let claim = await leases.commitClaim(for: unit),
                          let result = try await store.recordChangedVerdicts(prepared.verdicts, claiming: claim) else {
                        await leases.lost(unit)
                        throw ClaimLost()
                    }
                    recorded = result
                } else {
                    recorded = try await store.recordChangedVerdicts(prepared.verdicts)
                }
                return (recorded, prepared.verdicts.items.count, prepared.rejected, prepared.superseded)
            })
        }

        mutating func awaitOldestWrite() async throws {
            let (recorded, of, rejected, superseded) = try await writes.removeFirst().value
            summary.recorded += recorded.written
            summary.erased += recorded.erased
            summary.unchanged += of - recorded.written - recorded.erased
            summary.rejected += rejected
            summary.superseded += superseded
        }

        /// Waits for every queued write, whatever it ends with (the caller is already failing).
        mutating func settleWrites() async {
            for write in writes { _ = try? await write.value }
            writes.removeAll()
        }

        mutating func awaitWrites() async throws {
            while !writes.isEmpty { try await awaitOldestWrite() }
        }
    }
}
