import Foundation

/// Combines Prometheus text expositions of several processes into one: each metric family appears once (one
/// `# HELP`/`# TYPE`), with a `process` label telling the daemon's samples from the server's and an `instance`
/// label telling one daemon from another. The texts come
/// from swift-prometheus registries; this only regroups their lines.
enum MetricsExposition {
    struct Family {
        var help: String?
        var type: String?
        var samples: [String] = []
    }

    struct Sample: Equatable {
        var labels: [String: String]
        var value: Double
    }

    /// One process's exposition and the labels its samples get (none for the store's own counts).
    struct Source {
        var process: String
        var instance: String?
        var text: String

        var labels: [(String, String)] {
            guard !process.isEmpty else { return [] }
            return [("process", process)] + (instance.map { [("instance", $0)] } ?? [])
        }
    }

    static func merge(_ sources: [Source]) -> String {
        var order: [String] = []
        var families: [String: Family] = [:]
        for source in sources {
            let labels = source.labels
            var current: String?
            for line in source.text.split(separator: "\n", omittingEmptySubsequences: true) {
                if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                    let parts = line.split(separator: " ", maxSplits: 3)
                    guard parts.count >= 4 else { continue }
                    let name = String(parts[2])
                    var family = families[name] ?? {
                        order.append(name)
                        return Family()
                    }()
                    if parts[1] == "HELP" { family.help = family.help ?? String(line) } else { family.type = family.type ?? String(line) }
                    families[name] = family
                    current = name
                } else if line.hasPrefix("#") {
                    continue
                } else {
                    let sampleName = String(line.prefix { $0 != "{" && $0 != " " })
                    let family = current.flatMap { sampleName.hasPrefix($0) ? $0 : nil } ?? sampleName
                    if families[family] == nil {
                        families[family] = Family()
                        order.append(family)
                    }
                    families[family]?.samples.append(labelled(String(line), labels: labels))
                }
            }
        }
        var output = ""
        for name in order {
            guard let family = families[name] else { continue }
            if let help = family.help { output += help + "\n" }
            if let type = family.type { output += type + "\n" }
            for sample in family.samples { output += sample + "\n" }
        }
        return output
    }

    /// Adds `labels` (`process="…"`, `instance="…"`) first in a sample line's labels.
    static func labelled(_ line: String, labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return line }
        guard let nameEnd = line.firstIndex(where: { $0 == "{" || $0 == " " }) else { return line }
        let name = line[..<nameEnd]
        let added = labels.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",")
        if line[nameEnd] == "{" {
            let rest = line[line.index(after: nameEnd)...]
            return "\(name){\(added)" + (rest.hasPrefix("}") ? "" : ",") + rest
        }
        return "\(name){\(added)}" + line[nameEnd...]
    }

    /// Samples of one metric (exact name) in an exposition, with their labels.
    static func samples(named name: String, in text: String) -> [Sample] {
        var result: [Sample] = []
        for line in text.split(separator: "\n") where line.hasPrefix(name) && !line.hasPrefix("#") {
            let rest = line.dropFirst(name.count)
            var labels: [String: String] = [:]
            var valuePart = rest
            if rest.hasPrefix("{") {
                guard let close = rest.firstIndex(of: "}") else { continue }
                for pair in rest[rest.index(after: rest.startIndex)..<close].split(separator: ",") {
                    let kv = pair.split(separator: "=", maxSplits: 1)
                    if kv.count == 2 { labels[String(kv[0])] = String(kv[1].dropFirst().dropLast()) }
                }
                valuePart = rest[rest.index(after: close)...]
            } else if !rest.hasPrefix(" ") {
                continue
            }
            guard let value = Double(valuePart.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else { continue }
            result.append(Sample(labels: labels, value: value))
        }
        return result
    }
}
