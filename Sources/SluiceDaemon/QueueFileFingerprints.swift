import Foundation
import SluiceCore

/// The fingerprint each text queue file's lines were first recorded under, written down until the file is in done/.
///
/// Lines without an id of their own are recorded as `{file}:{line}:{fingerprint}` (`TextQueueIngestor.LineIDs`), the
/// fingerprint hashing the file's bytes so a later file of the same name gets ids of its own. An erasure blanks an
/// erased user's lines in queue files in place (`Erasure.eraseUser`), which changes those bytes: a daemon replaying a
/// file after a crash would hash it differently and record its id-less lines a second time under new ids. So before
/// a daemon records anything of a file, it writes down the fingerprint it uses, with what blanking leaves as it was —
/// the file's device, inode and size, and where its lines end — in `queues/text/.fingerprints/`; a daemon that reads a
/// file matching a record (a replay, by this daemon or one that took the file over) uses the recorded fingerprint.
/// The record goes once the file is in done/; one a crash leaves behind names a file done/ still holds (its inode is
/// not free), so no new file matches it, and the next file of that name writes its own.
struct QueueFileFingerprints: Sendable {
    let folder: URL

    init(root: DataRoot) { folder = root.textQueueFingerprints }

    /// What is written down for one file.
    struct Record: Codable, Equatable {
        var name: String
        var device: UInt64
        var inode: UInt64
        var size: Int
        var lineEnds: String
        var fingerprint: String
    }

    /// A record that could not be read or written, named with its file.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The fingerprint for queue file `name`, read as `contents` from the file `identity` names: the recorded one when
    /// a record matches the file (`resumed`), otherwise the hash of `contents`, written down before it is returned.
    func fingerprint(of name: String, contents: Data, identity: FileIdentity) throws -> (fingerprint: String, resumed: Bool) {
        let file = record(of: name)
        let lineEnds = Self.lineEnds(contents)
        if let data = try? Data(contentsOf: file) {
            // A record that does not decode is replaced, as one for another file is: it cannot say what was used.
            if let found = try? JSONDecoder().decode(Record.self, from: data), found.name == name, found.device == identity.device,
               found.inode == identity.inode, found.size == contents.count, found.lineEnds == lineEnds {
                return (found.fingerprint, true)
            }
        }
        let record = Record(name: name, device: identity.device, inode: identity.inode, size: contents.count, lineEnds: lineEnds,
                            fingerprint: ContentHash.sha256Prefix(contents, bytes: 4))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try FileOps.writeAtomically(try encoder.encode(record), to: file)
        } catch {
            throw Failure(description: "cannot write down the fingerprint of text queue file \(name) at \(file.path): \(error)")
        }
        return (record.fingerprint, false)
    }

    /// Removes the record of `name` once its file is in done/ (a record left behind matches no new file).
    func forget(_ name: String) throws {
        let file = record(of: name)
        guard unlink(file.path) == 0 || errno == ENOENT else { throw FileOpError("remove", file.path) }
    }

    /// A record's file: named by a hash of the queue file's name, which may be as long as a name can be (the record's
    /// temp file while it is written adds to it).
    func record(of name: String) -> URL {
        folder.appendingPathComponent(ContentHash.sha256Prefix(Array(name.utf8), bytes: 16) + ".json")
    }

    /// A hash of where `data`'s lines end (the offset of each `\n`), which blanking a line keeps.
    static func lineEnds(_ data: Data) -> String {
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> String in
            // FNV-1a over each offset's eight bytes: the same in every process (Swift's `Hasher` is seeded per run).
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var count: UInt64 = 0
            if let base = bytes.baseAddress {
                var offset = 0
                while offset < bytes.count, let found = memchr(base + offset, 0x0A, bytes.count - offset) {
                    let end = base.distance(to: UnsafeRawPointer(found))
                    var value = UInt64(end)
                    for _ in 0..<8 {
                        hash = (hash ^ (value & 0xFF)) &* 0x100_0000_01B3
                        value >>= 8
                    }
                    count += 1
                    offset = end + 1
                }
            }
            return "\(count):" + String(hash, radix: 16)
        }
    }
}
