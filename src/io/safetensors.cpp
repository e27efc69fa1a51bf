#include "io/safetensors.h"

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/half.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

namespace fusedngp {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same limit as the reference implementation
constexpr const char* kMetadataKey = "__metadata__";

size_t dtype_size(TensorDtype dtype) {
    switch (dtype) {
    case TensorDtype::F32: return 4;
    case TensorDtype::F16: return 2;
    case TensorDtype::U8: return 1;
    }
    return 4;
}

void put_le(std::vector<uint8_t>& out, uint64_t value, int n_bytes) {
    for (int i = 0; i < n_bytes; ++i) out.push_back((uint8_t)(value >> (8 * i)));
}

uint64_t get_le(const uint8_t* p, int n_bytes) {
    uint64_t value = 0;
    for (int i = 0; i < n_bytes; ++i) value |= (uint64_t)p[i] << (8 * i);
    return value;
}

// Checked product of a shape (false on overflow).
bool checked_product(const std::vector<size_t>& shape, size_t& product) {
    product = 1;
    for (size_t s : shape) {
        if (s != 0 && product > std::numeric_limits<size_t>::max() / s) return false;
        product *= s;
    }
    return true;
}

void check_tensors_to_write(const std::vector<SafetensorsTensor>& tensors) {
    std::set<std::string> names;
    for (const auto& t : tensors) {
        if (t.name.empty()) throw std::invalid_argument("safetensors: tensor with an empty name");
        if (t.name == kMetadataKey) throw std::invalid_argument("safetensors: \"__metadata__\" is reserved");
        if (!names.insert(t.name).second) throw std::invalid_argument("safetensors: duplicate tensor " + t.name);
        size_t count;
        if (!checked_product(t.shape, count) || count != t.values.size()) {
            throw std::invalid_argument("safetensors: tensor " + t.name + " has " + std::to_string(t.values.size()) +
                                        " values, its shape needs a different count");
        }
        if (t.dtype == TensorDtype::U8) {
            for (float v : t.values)
                if (!(v >= 0 && v <= 255 && v == (float)(int)v))
                    throw std::invalid_argument("safetensors: U8 tensor " + t.name + " holds a value outside 0..255 integers");
        }
    }
}

// ---- reading ---------------------------------------------------------------

// One tensor's header entry, validated except for its place in the layout.
struct Entry {
    std::string name;
    TensorDtype dtype;
    std::vector<size_t> shape;
    uint64_t begin, end;
};

class Decoder {
public:
    explicit Decoder(const std::string& source) : source_(source) {}

    [[noreturn]] void fail(const std::string& problem) const {
        throw InputError("invalid safetensors file '" + source_ + "': " + problem);
    }

    uint64_t get_unsigned(const nlohmann::json& value, const std::string& what) const {
        if (!value.is_number_unsigned()) fail(what + " must be a non-negative integer, got " + value.dump());
        return value.get<uint64_t>();
    }

    Entry parse_entry(const std::string& name, const nlohmann::json& value, uint64_t data_size) const {
        const std::string where = "tensor '" + name + "'";
        if (!value.is_object()) fail(where + " must be a JSON object");
        Entry e{name, TensorDtype::F32, {}, 0, 0};

        auto dtype = value.find("dtype");
        if (dtype == value.end() || !dtype->is_string()) fail(where + " needs a string \"dtype\"");
        const std::string dtype_name = dtype->get<std::string>();
        if (dtype_name == "F32") {
            e.dtype = TensorDtype::F32;
        } else if (dtype_name == "F16") {
            e.dtype = TensorDtype::F16;
        } else if (dtype_name == "U8") {
            e.dtype = TensorDtype::U8;
        } else {
            fail(where + " has unsupported dtype \"" + dtype_name + "\" (supported: F32, F16, U8)");
        }

        auto shape = value.find("shape");
        if (shape == value.end() || !shape->is_array()) fail(where + " needs a \"shape\" array");
        for (const auto& s : *shape) e.shape.push_back((size_t)get_unsigned(s, where + " shape entry"));

        auto offsets = value.find("data_offsets");
        if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2) {
            fail(where + " needs \"data_offsets\": [begin, end]");
        }
        e.begin = get_unsigned((*offsets)[0], where + " data_offsets");
        e.end = get_unsigned((*offsets)[1], where + " data_offsets");
        if (e.begin > e.end) fail(where + " has data_offsets with begin > end");
        if (e.end > data_size) {
            fail(where + " data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                 "] are out of range (data section is " + std::to_string(data_size) + " bytes)");
        }

        size_t count;
        if (!checked_product(e.shape, count) || count > std::numeric_limits<uint64_t>::max() / 8) {
            fail(where + " shape is too large");
        }
        const uint64_t expected = (uint64_t)count * dtype_size(e.dtype);
        if (expected != e.end - e.begin) {
            fail(where + " shape and dtype need " + std::to_string(expected) + " bytes but data_offsets span " +
                 std::to_string(e.end - e.begin));
        }
        return e;
    }

    SafetensorsMetadata parse_metadata(const nlohmann::json& value) const {
        if (!value.is_object()) fail("\"__metadata__\" must be a JSON object");
        SafetensorsMetadata metadata;
        for (auto it = value.begin(); it != value.end(); ++it) {
            if (!it->is_string()) fail("metadata value of \"" + it.key() + "\" must be a string");
            metadata[it.key()] = it->get<std::string>();
        }
        return metadata;
    }

    // Tensors must tile the data section exactly, in offset order.
    void check_layout(std::vector<Entry>& entries, uint64_t data_size) const {
        std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            return a.begin != b.begin ? a.begin < b.begin : (a.end != b.end ? a.end < b.end : a.name < b.name);
        });
        uint64_t position = 0;
        for (const Entry& e : entries) {
            if (e.begin < position) fail("tensor '" + e.name + "' overlaps the previous tensor's data");
            if (e.begin > position) {
                fail("gap of " + std::to_string(e.begin - position) + " bytes before tensor '" + e.name + "'");
            }
            position = e.end;
        }
        if (position != data_size) {
            fail(std::to_string(data_size - position) + " trailing bytes after the last tensor's data");
        }
    }

private:
    std::string source_;
};

std::vector<float> decode_values(const uint8_t* data, const Entry& e) {
    size_t count = (size_t)((e.end - e.begin) / dtype_size(e.dtype));
    std::vector<float> values(count);
    const uint8_t* p = data + e.begin;
    for (size_t i = 0; i < count; ++i) {
        switch (e.dtype) {
        case TensorDtype::F32: values[i] = bits_float((uint32_t)get_le(p + 4 * i, 4)); break;
        case TensorDtype::F16: values[i] = half_to_float((uint16_t)get_le(p + 2 * i, 2)); break;
        case TensorDtype::U8: values[i] = (float)p[i]; break;
        }
    }
    return values;
}

} // namespace

const char* to_string(TensorDtype dtype) {
    switch (dtype) {
    case TensorDtype::F32: return "F32";
    case TensorDtype::F16: return "F16";
    case TensorDtype::U8: return "U8";
    }
    return "F32";
}

size_t SafetensorsTensor::element_count() const {
    size_t n = 1;
    for (size_t s : shape) n *= s;
    return n;
}

const SafetensorsTensor* SafetensorsContents::find(const std::string& name) const {
    for (const auto& t : tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

std::vector<uint8_t> encode_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                        const SafetensorsMetadata& metadata) {
    check_tensors_to_write(tensors);
    // ordered_json keeps __metadata__ first and the tensors in layout order,
    // which makes the header easy to read by eye.
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header[kMetadataKey] = metadata;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        const uint64_t size = t.values.size() * dtype_size(t.dtype);
        header[t.name] = {{"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + size}}};
        offset += size;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("safetensors: names and metadata must be UTF-8: ") + e.what());
    }
    text.append((8 - text.size() % 8) % 8, ' ');

    std::vector<uint8_t> out;
    out.reserve(8 + text.size() + offset);
    put_le(out, text.size(), 8);
    out.insert(out.end(), text.begin(), text.end());
    for (const auto& t : tensors) {
        for (float v : t.values) {
            switch (t.dtype) {
            case TensorDtype::F32: put_le(out, float_bits(v), 4); break;
            case TensorDtype::F16: put_le(out, float_to_half(v), 2); break;
            case TensorDtype::U8: out.push_back((uint8_t)v); break;
            }
        }
    }
    return out;
}

SafetensorsContents decode_safetensors(const std::vector<uint8_t>& bytes, const std::string& source) {
    Decoder decoder(source);
    if (bytes.size() < 8) {
        decoder.fail("file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
    }
    const uint64_t header_size = get_le(bytes.data(), 8);
    if (header_size > kMaxHeaderBytes) {
        decoder.fail("header length " + std::to_string(header_size) + " exceeds the 100 MB limit");
    }
    if (header_size > bytes.size() - 8) {
        decoder.fail("header length " + std::to_string(header_size) + " exceeds the file size (" +
                     std::to_string(bytes.size()) + " bytes)");
    }
    const char* header_text = reinterpret_cast<const char*>(bytes.data() + 8);
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(header_text, header_text + header_size);
    } catch (const nlohmann::json::exception& e) {
        decoder.fail(std::string("header is not valid JSON (") + e.what() + ")");
    }
    if (!header.is_object()) decoder.fail("header is not a JSON object");

    const uint8_t* data = bytes.data() + 8 + header_size;
    const uint64_t data_size = bytes.size() - 8 - header_size;
    SafetensorsContents contents;
    std::vector<Entry> entries;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == kMetadataKey) {
            contents.metadata = decoder.parse_metadata(*it);
        } else {
            entries.push_back(decoder.parse_entry(it.key(), *it, data_size));
        }
    }
    decoder.check_layout(entries, data_size);

    contents.tensors.reserve(entries.size());
    for (const Entry& e : entries) {
        contents.tensors.push_back({e.name, e.shape, decode_values(data, e), e.dtype});
    }
    return contents;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const SafetensorsMetadata& metadata) {
    write_file_atomically(path, encode_safetensors(tensors, metadata));
}

SafetensorsContents read_safetensors(const std::string& path) {
    return decode_safetensors(read_file_bytes(path), path);
}

} // namespace fusedngp
