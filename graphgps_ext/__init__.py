"""graphgps_ext: config-driven graph transformer experiments on PyG GraphGym."""
import warnings

# GraphGym warns at import that Lightning is missing; we use our own loop.
warnings.filterwarnings('ignore', message='To use GraphGym')

__version__ = '0.1.0'
