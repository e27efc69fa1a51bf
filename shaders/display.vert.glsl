#version 330 core
// A textured quad from gl_VertexID (no vertex buffer): the image's rectangle
// in normalised device coordinates. Texture row 0 is the image's top row, so
// v runs top to bottom (the flip happens here, not when loading).
uniform vec4 u_rect;  // x0, y0 (top-left), x1, y1 (bottom-right), NDC
out vec2 v_uv;

void main() {
    vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
    v_uv = corner;
    gl_Position = vec4(mix(u_rect.x, u_rect.z, corner.x), mix(u_rect.y, u_rect.w, corner.y), 0.0, 1.0);
}
