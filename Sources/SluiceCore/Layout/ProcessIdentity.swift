#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Which machine and process namespace this process runs in, so a daemon can tell a dead local process's claims
/// and temp files from a live process elsewhere. The host name alone is not enough: cloned machines and containers
/// sharing the host's network share it while their process ids are unrelated.
public enum ProcessIdentity {
    /// 12 hex digits of a hash of the host name, the boot id (one per boot of one kernel) and the pid namespace.
    public static let machine: String = {
        func read(_ path: String) -> String {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        }
        let namespace = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")) ?? ""
        let seed = [ProcessInfo.processInfo.hostName, read("/proc/sys/kernel/random/boot_id"), namespace].joined(separator: "|")
        return ContentHash.sha256Prefix(Data(seed.utf8), bytes: 6)
    }()

    /// Whether process `pid` of machine `machine` is known to have exited: decidable only for this machine and
    /// namespace (false for any other, whose processes this one cannot see).
    public static func isDead(machine: String, pid: Int32) -> Bool {
        machine == self.machine && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH
    }
}
