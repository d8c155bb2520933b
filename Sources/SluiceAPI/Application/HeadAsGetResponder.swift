import HTTPTypes
import Hummingbird

/// HEAD on every GET route (RFC 9110 §9.1: a server that supports GET supports HEAD; load balancers probe
/// `/healthz` with it): the request is answered as the GET would be — status and headers, `Content-Length` the GET
/// body's length — without the body. Routes without GET answer HEAD as any other method they lack (405, `Allow`).
struct HeadAsGetResponder<Base: HTTPResponder>: HTTPResponder where Base.Context == APIContext {
    let base: Base

    func respond(to request: Request, context: APIContext) async throws -> Response {
        guard request.method == .head else { return try await base.respond(to: request, context: context) }
        var head = request.head
        head.method = .get
        var response = try await base.respond(to: Request(head: head, body: request.body), context: context)
        let length = response.headers[.contentLength] ?? response.body.contentLength.map(String.init)
        // Setting the body sets Content-Length to the new body's: the GET's is put back after.
        response.body = ResponseBody()
        response.headers[.contentLength] = length
        return response
    }
}
