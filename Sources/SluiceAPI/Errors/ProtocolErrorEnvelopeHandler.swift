import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Requests NIO cannot even parse (huge headers, bad framing) never reach the router; this channel handler
/// answers them with the documented envelope instead of an empty 400, then closes the connection.
final class ProtocolErrorEnvelopeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        let (status, message): (HTTPResponse.Status, String) = switch parserError {
        case .headerOverflow: (.requestHeaderFieldsTooLarge, "request headers are too large")
        default: (.badRequest, "malformed HTTP request: \(parserError)")
        }
        let body = APIError(.invalidArgument, message, status: status).envelopeJSON
        let head = HTTPResponse(status: status, headerFields: [.contentType: "application/json", .contentLength: "\(body.count)",
                                                               .connection: "close"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}
