import ArgumentParser
import Foundation
import SluiceCore

/// Loads pipeline.json for a command, turning configuration errors into a clean exit with the message.
struct PipelineConfigLoad {
    let config: PipelineConfig

    init(path: String) throws {
        do {
            config = try PipelineConfig.load(from: URL(fileURLWithPath: path))
        } catch let error as ConfigurationError {
            throw CLIError(message: error.description)
        }
    }
}

/// A user-facing failure: printed as `sluice: <message>`, exit code 1.
struct CLIError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
