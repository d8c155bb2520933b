import SluiceCore

/// Upload ids this server is storing right now. A second upload of an id while the first is being stored waits for
/// it, then is answered against what the first stored (200 for the same bytes, 409 `ALREADY_EXISTS` for others):
/// without this, both passed the "already pending?" check, both spent upload quota, and the one that lost the
/// race answered 500.
actor UploadsInFlight {
    private var waiting: [ItemID: [CheckedContinuation<Void, Never>]] = [:]

    /// Runs `body` as the only upload of `id` in this process.
    func exclusively<T: Sendable>(_ id: ItemID, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire(id)
        do {
            let result = try await body()
            release(id)
            return result
        } catch {
            release(id)
            throw error
        }
    }

    private func acquire(_ id: ItemID) async {
        guard waiting[id] != nil else {
            waiting[id] = []
            return
        }
        await withCheckedContinuation { continuation in waiting[id, default: []].append(continuation) }
    }

    private func release(_ id: ItemID) {
        guard var queue = waiting[id], !queue.isEmpty else {
            waiting[id] = nil
            return
        }
        let next = queue.removeFirst()
        waiting[id] = queue
        next.resume()
    }
}
