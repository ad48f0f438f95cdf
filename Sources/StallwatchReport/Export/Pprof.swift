import CZlib
import StallwatchCore

/// pprof: a gzip'ed `profile.proto` (github.com/google/pprof, `proto/profile.proto`) of the
/// stalls' samples, for `go tool pprof`, Pyroscope and Grafana. Sample types `samples/count`
/// and `wall/nanoseconds` (the stall time each sample stands for, as the breakdown weighs it;
/// the default); labels `category` (the sample's), `tier`, `signature`, `trace_id`; locations
/// leaf first with function names and `file:line`; one mapping per trace and image, with the
/// image's build id.
///
/// Pure; use it on any thread.
package enum PprofExporter {
    /// The gzip'ed profile of `inputs` (traces with their analyzed stalls).
    package static func export(_ inputs: [JSONLinesExporter.Input]) -> [UInt8] {
        gzip(profile(inputs))
    }

    /// The profile message, not compressed.
    static func profile(_ inputs: [JSONLinesExporter.Input]) -> [UInt8] {
        var builder = ProfileBuilder()
        let samplesType = ValueType(type: builder.string("samples"), unit: builder.string("count"))
        let wallType = ValueType(type: builder.string("wall"), unit: builder.string("nanoseconds"))
        var samples = ProtoWriter()
        var first: UInt64?
        var last: UInt64?
        var period: UInt64 = 5_000_000
        for (traceIndex, input) in inputs.enumerated() {
            let facts = TraceFacts(input.trace)
            if let interval = input.trace.trace.header?.sampleInterval { period = interval.nanoseconds }
            if let start = facts.wallClockStart {
                first = min(first ?? start, start)
                last = max(last ?? start, start &+ ReportBuilder.wallRunTime(of: input.trace))
            }
            // Each distinct stack's packed locations, made once per trace; each label's field
            // encoded once (the category's per category, the rest per stall).
            var stacks: [SampleStackKey: [UInt8]] = [:]
            var categories: [StallCategory: [UInt8]] = [:]
            let (categoryKey, tierKey) = (builder.string("category"), builder.string("tier"))
            let (signatureKey, traceKey) = (builder.string("signature"), builder.string("trace_id"))
            let traceID = builder.string(facts.traceID)
            for analyzed in input.stalls {
                let weights = analyzed.sampleWeights
                let stallLabels = Self.labels([
                    (tierKey, builder.string(analyzed.stall.tier.rawValue)),
                    (signatureKey, builder.string(analyzed.key.text)), (traceKey, traceID),
                ])
                for (index, sample) in analyzed.stall.samples.enumerated() {
                    let key = SampleStackKey(analyzed, sample: index, category: nil)
                    if stacks[key] == nil {
                        let locations =
                            sample.frames.isEmpty
                            ? [builder.placeholder(missingStackName(sample))]
                            : zip(sample.frames, analyzed.frameNames(ofSample: index)).map {
                                builder.location(
                                    $0, name: $1, trace: traceIndex, modules: input.trace.trace.modules)
                            }
                        var packed = ProtoWriter()
                        packed.packed(1, locations)
                        stacks[key] = packed.bytes
                    }
                    let category = analyzed.classifications[index].category
                    if categories[category] == nil {
                        categories[category] = Self.labels([(categoryKey, builder.string(category.rawValue))])
                    }
                    var message = ProtoWriter()
                    message.bytes.append(contentsOf: stacks[key]!)
                    message.packed(2, [1, weights[index]])
                    message.bytes.append(contentsOf: categories[category]!)
                    message.bytes.append(contentsOf: stallLabels)
                    samples.message(2, message)
                }
            }
        }
        var profile = ProtoWriter()
        profile.message(1, samplesType.encoded)
        profile.message(1, wallType.encoded)
        profile.bytes.append(contentsOf: samples.bytes)
        for mapping in builder.mappings { profile.message(3, mapping.encoded) }
        for location in builder.locations { profile.message(4, location) }
        for function in builder.functions { profile.message(5, function) }
        let defaultType = builder.string("wall")
        if let first { profile.varint(9, first) }
        if let first, let last, last > first { profile.varint(10, last - first) }
        profile.message(11, wallType.encoded)
        profile.varint(12, period)
        profile.varint(14, defaultType)
        for string in builder.strings { profile.string(6, string) }
        return profile.bytes
    }

    /// Sample fields 3 (`Label`) of `pairs` (key, string value), encoded.
    private static func labels(_ pairs: [(key: UInt64, value: UInt64)]) -> [UInt8] {
        var fields = ProtoWriter()
        for (key, value) in pairs {
            fields.message(3, ProtoWriter(varints: [1: key, 2: value]))
        }
        return fields.bytes
    }

    /// `bytes` as a gzip member (zlib's deflate, best compression).
    static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        guard
            deflateInit2_(
                &stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { preconditionFailure("zlib refused its own defaults") }
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(bytes.count))) + 64)
        let written = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = UInt32(target.count)
                let status = deflate(&stream, Z_FINISH)
                require(status == Z_STREAM_END, "deflate did not finish in a deflateBound buffer")
                return target.count - Int(stream.avail_out)
            }
        }
        return Array(output[..<written])
    }
}

/// The string table, functions, locations and mappings of one profile, deduplicated.
private struct ProfileBuilder {
    struct Mapping {
        var id: UInt64
        var start: UInt64
        var limit: UInt64
        var file: UInt64
        var buildID: UInt64

        /// Fields 7, 8 and 9 (`has_functions`, `has_filenames`, `has_line_numbers`) are set.
        var encoded: ProtoWriter {
            ProtoWriter(varints: [1: id, 2: start, 3: limit, 5: file, 6: buildID, 7: 1, 8: 1, 9: 1])
        }
    }

    private(set) var strings: [String] = [""]
    private var stringIDs: [String: UInt64] = ["": 0]
    private(set) var functions: [ProtoWriter] = []
    private var functionIDs: [String: UInt64] = [:]
    private(set) var locations: [ProtoWriter] = []
    private var locationIDs: [LocationKey: UInt64] = [:]
    private(set) var mappings: [Mapping] = []
    private var mappingIDs: [MappingKey: Int] = [:]

    struct LocationKey: Hashable {
        var trace: Int
        var address: UInt64
    }

    struct MappingKey: Hashable {
        var trace: Int
        var module: UInt32
    }

    mutating func string(_ text: String) -> UInt64 {
        if let id = stringIDs[text] { return id }
        let id = UInt64(strings.count)
        strings.append(text)
        stringIDs[text] = id
        return id
    }

    mutating func function(name: String, file: String?) -> UInt64 {
        let key = name + "\u{0}" + (file ?? "")
        if let id = functionIDs[key] { return id }
        let id = UInt64(functions.count + 1)
        var writer = ProtoWriter()
        writer.varint(1, id)
        writer.varint(2, string(name))
        writer.varint(3, string(name))
        if let file { writer.varint(4, string(file)) }
        functions.append(writer)
        functionIDs[key] = id
        return id
    }

    /// The location of `frame`, named `name`, in trace number `trace` (addresses of different
    /// traces are different locations: each process had its own layout).
    mutating func location(_ frame: Frame, name: String, trace: Int, modules: [TraceRecord.Module]) -> UInt64 {
        let key = LocationKey(trace: trace, address: frame.address)
        if let id = locationIDs[key] { return id }
        let id = UInt64(locations.count + 1)
        var writer = ProtoWriter()
        writer.varint(1, id)
        if let path = frame.module, let module = modules.first(where: { $0.path == path }) {
            writer.varint(2, mapping(module, trace: trace, address: frame.address))
        }
        writer.varint(3, frame.address)
        var line = ProtoWriter()
        line.varint(1, function(name: name, file: frame.file))
        if let number = frame.line { line.varint(2, UInt64(number)) }
        writer.message(4, line)
        locations.append(writer)
        locationIDs[key] = id
        return id
    }

    /// A location for a sample without a backtrace (`[no stack]`).
    mutating func placeholder(_ name: String) -> UInt64 {
        let key = LocationKey(trace: -1, address: UInt64(string(name)))
        if let id = locationIDs[key] { return id }
        let id = UInt64(locations.count + 1)
        var writer = ProtoWriter()
        writer.varint(1, id)
        var line = ProtoWriter()
        line.varint(1, function(name: name, file: nil))
        writer.message(4, line)
        locations.append(writer)
        locationIDs[key] = id
        return id
    }

    /// The mapping of `module` in trace `trace`, grown to cover `address`.
    mutating func mapping(_ module: TraceRecord.Module, trace: Int, address: UInt64) -> UInt64 {
        let key = MappingKey(trace: trace, module: module.index)
        if let index = mappingIDs[key] {
            mappings[index].start = min(mappings[index].start, address)
            mappings[index].limit = max(mappings[index].limit, address + 1)
            return mappings[index].id
        }
        let id = UInt64(mappings.count + 1)
        mappingIDs[key] = mappings.count
        mappings.append(
            Mapping(
                id: id, start: min(module.loadAddress, address), limit: max(module.loadAddress, address) + 1,
                file: string(module.path), buildID: string(hex(module.buildID))))
        return id
    }
}

private struct ValueType {
    var type: UInt64
    var unit: UInt64

    var encoded: ProtoWriter { ProtoWriter(varints: [1: type, 2: unit]) }
}

/// Protocol-buffer wire format, the few shapes profile.proto needs.
struct ProtoWriter {
    var bytes: [UInt8] = []

    /// An empty message.
    init() {}

    /// A message of varint fields only, `field: value` in order.
    init(varints fields: KeyValuePairs<UInt64, UInt64>) {
        for (field, value) in fields { varint(field, value) }
    }

    mutating func rawVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// A varint field; zero is the default and is left out, as proto3 does.
    mutating func varint(_ field: UInt64, _ value: UInt64) {
        guard value != 0 else { return }
        rawVarint(field << 3)
        rawVarint(value)
    }

    mutating func lengthDelimited(_ field: UInt64, _ payload: [UInt8]) {
        rawVarint(field << 3 | 2)
        rawVarint(UInt64(payload.count))
        bytes.append(contentsOf: payload)
    }

    mutating func message(_ field: UInt64, _ message: ProtoWriter) {
        lengthDelimited(field, message.bytes)
    }

    mutating func string(_ field: UInt64, _ text: String) {
        lengthDelimited(field, Array(text.utf8))
    }

    mutating func packed(_ field: UInt64, _ values: [UInt64]) {
        var payload = ProtoWriter()
        for value in values { payload.rawVarint(value) }
        lengthDelimited(field, payload.bytes)
    }
}
