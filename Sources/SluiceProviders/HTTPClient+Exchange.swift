import AsyncHTTPClient
import NIOCore

extension HTTPClient {
    /// One request and the reading of its answer, both within `timeout`. AsyncHTTPClient's own deadline ends when the
    /// answer's head arrives; the body is then read under the client's read timeout, which bounds only the pause
    /// between two reads (`.providers` has none; the shared settings' is 90 s), so a server that sent its head and then
    /// a byte now and then held the caller, and one of its in-flight slots, for as long as it went on. Here `read`,
    /// which takes what it needs of the body, runs under the same deadline: past it the request is cancelled (its
    /// connection closed) and `HTTPClientError.deadlineExceeded` is thrown, as for a late head.
    public func exchange<T: Sendable>(_ request: HTTPClientRequest, timeout: TimeAmount,
                                      read: @escaping @Sendable (HTTPClientResponse) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: ExchangeStep<T>.self) { group in
            group.addTask {
                let response = try await self.execute(request, timeout: timeout)
                return .answered(try await read(response))
            }
            group.addTask {
                try await _Concurrency.Task.sleep(nanoseconds: UInt64(max(0, timeout.nanoseconds)))
                return .late
            }
            defer { group.cancelAll() }
            switch try await group.next() {
            case let .answered(value)?:
                // A body cut short because the caller's task was cancelled is not an answer.
                try _Concurrency.Task.checkCancellation()
                return value
            case .late?, nil:
                throw HTTPClientError.deadlineExceeded
            }
        }
    }
}

private enum ExchangeStep<T: Sendable>: Sendable {
    case answered(T)
    case late
}
